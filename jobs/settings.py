"""The project's settings, read from the environment once (see README, Configuration).

Every module of ``jobs`` and ``orchestration`` takes its configuration from a :class:`Settings`
(``load_settings()`` for the process's environment); ``engine`` takes what it needs as arguments.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from engine.errors import RepriseError

PROJECT_ROOT = Path(__file__).resolve().parents[1]


class SettingsError(RepriseError):
    """A configuration value that cannot be used; the message names the variable."""


#: The most key buckets a run may have (``REPRISE_BUCKETS``; a run's ``run.json`` with more is
#: refused): each is a Spark task per group of batches and a state file.
MAX_BUCKETS = 65_536


@dataclass(frozen=True)
class Settings:
    """Every ``REPRISE_*`` variable, with its default."""

    #: ``REPRISE_WAREHOUSE``: where recordings and runs live.
    warehouse: Path = Path("warehouse")
    #: ``REPRISE_CATALOG``: the catalog directory (recordings/*.yaml, queries/*.yaml).
    catalog: Path = PROJECT_ROOT / "schemas"
    #: ``REPRISE_SPARK_MASTER``: Spark master URL.
    spark_master: str = "local[*]"
    #: ``REPRISE_SPARK_CONF``: extra Spark conf, ``key=value`` pairs separated by ``;``.
    spark_conf: str = ""
    #: ``REPRISE_DELTA_BACKEND``: ``auto``, ``delta-rs`` or ``delta-spark`` (checked by
    #: :func:`jobs.storage.open_storage`).
    delta_backend: str = "auto"
    #: ``REPRISE_DELTA_JARS``: comma-separated local paths of the Delta Spark jars.
    delta_jars: str = ""
    #: ``REPRISE_DELTA_PACKAGES``: Maven coordinates of Delta.
    delta_packages: str = ""
    #: ``REPRISE_BATCHES_PER_JOB``: consecutive batches run by one Spark job.
    batches_per_job: int = 32
    #: ``REPRISE_BUCKETS``: key buckets of a new run (default: the cluster's executor cores, see
    #: :func:`jobs.cluster.bucket_count`).
    buckets: int | None = None
    #: ``REPRISE_EXCHANGE``: how events reach the key buckets (``direct`` or ``spark``; checked
    #: by the replay).
    exchange: str = "direct"
    #: ``REPRISE_KERNEL_DIR`` (else ``$XDG_CACHE_HOME/reprise/qre-kernels``, else
    #: ``~/.cache/reprise/qre-kernels``): generated QRE kernels and numba's cache; None when no
    #: home directory is known (kernels are then compiled in memory).
    kernel_dir: Path | None = None
    #: ``REPRISE_PROGRESS=1``: draw progress bars even when stdout is not a terminal.
    progress: bool = False
    #: ``REPRISE_VERBOSE=1`` (or ``--verbose``): show the JVM's own log on stderr.
    verbose: bool = False
    #: ``REPRISE_LOCAL_EVENTS``: a ``reprise replay`` of at most this many events on the direct
    #: exchange runs its buckets in the command's own process, without starting Spark.
    local_events: int = 20_000

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Settings from ``env``; a malformed value raises :class:`SettingsError` naming it."""
        def get(name: str, default: str) -> str:
            return env.get(name) or default

        per_job = _integer("REPRISE_BATCHES_PER_JOB", get("REPRISE_BATCHES_PER_JOB", "32"), 1)
        buckets = get("REPRISE_BUCKETS", "")
        local = _integer("REPRISE_LOCAL_EVENTS", get("REPRISE_LOCAL_EVENTS", "20000"), 0)
        return cls(
            warehouse=Path(get("REPRISE_WAREHOUSE", "warehouse")),
            catalog=Path(get("REPRISE_CATALOG", str(PROJECT_ROOT / "schemas"))),
            spark_master=get("REPRISE_SPARK_MASTER", "local[*]"),
            spark_conf=get("REPRISE_SPARK_CONF", ""),
            delta_backend=get("REPRISE_DELTA_BACKEND", "auto"),
            delta_jars=get("REPRISE_DELTA_JARS", ""),
            delta_packages=get("REPRISE_DELTA_PACKAGES", ""),
            batches_per_job=per_job,
            buckets=(_integer("REPRISE_BUCKETS", buckets, 1, MAX_BUCKETS) if buckets
                     else None),
            exchange=get("REPRISE_EXCHANGE", "direct"),
            kernel_dir=_kernel_dir(env),
            progress=env.get("REPRISE_PROGRESS") == "1",
            verbose=env.get("REPRISE_VERBOSE", "") not in ("", "0"),
            local_events=local,
        )


def _integer(name: str, text: str, minimum: int, maximum: int | None = None) -> int:
    """The ASCII decimal integer ``text`` of variable ``name``, at least ``minimum`` (and at
    most ``maximum``)."""
    if not re.fullmatch(r"\s*[0-9]+\s*", text) or int(text) < minimum:
        kind = "a positive" if minimum == 1 else "a non-negative"
        raise SettingsError(f"{name}: expected {kind} integer, got {text!r}")
    if maximum is not None and int(text) > maximum:
        raise SettingsError(f"{name}: expected at most {maximum:,}, got {text!r}")
    return int(text)


def _kernel_dir(env: Mapping[str, str]) -> Path | None:
    """``REPRISE_KERNEL_DIR``, else the user's cache directory (never a shared temporary
    directory: the generated files are imported)."""
    if env.get("REPRISE_KERNEL_DIR"):
        return Path(env["REPRISE_KERNEL_DIR"])
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]) / "reprise" / "qre-kernels"
    try:
        return Path.home() / ".cache" / "reprise" / "qre-kernels"
    except RuntimeError:  # no home directory
        return None


def load_settings() -> Settings:
    """The settings of this process's environment."""
    return Settings.from_env(os.environ)

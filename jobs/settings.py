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
from engine.own_directory import only_mine

PROJECT_ROOT = Path(__file__).resolve().parents[1]
#: ``REPRISE_DELTA_BACKEND`` values.
BACKENDS = ("auto", "delta-rs", "delta-spark")
#: ``REPRISE_EXCHANGE`` values.
EXCHANGES = ("direct", "spark")
#: The most key buckets a run may have (``REPRISE_BUCKETS``; a run's ``run.json`` with more is
#: refused): each is a Spark task per group of batches and a state file.
MAX_BUCKETS = 10_000
#: Values of an on/off variable (any case); unset or empty is off.
FLAGS = {"1": True, "true": True, "yes": True, "on": True,
         "0": False, "false": False, "no": False, "off": False}


class SettingsError(RepriseError):
    """A configuration value that cannot be used; the message names the variable."""


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
    #: :func:`jobs.runtime.parallelism.bucket_count`).
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
        for name, value, allowed in (
                ("REPRISE_DELTA_BACKEND", get("REPRISE_DELTA_BACKEND", "auto"), BACKENDS),
                ("REPRISE_EXCHANGE", get("REPRISE_EXCHANGE", "direct"), EXCHANGES)):
            if value not in allowed:
                raise SettingsError(f"{name}: unknown value {value!r}; expected one of "
                                    f"{', '.join(allowed)}")
        return cls(
            warehouse=Path(get("REPRISE_WAREHOUSE", "warehouse")),
            catalog=Path(get("REPRISE_CATALOG", str(PROJECT_ROOT / "schemas"))),
            spark_master=get("REPRISE_SPARK_MASTER", "local[*]"),
            spark_conf=get("REPRISE_SPARK_CONF", ""),
            delta_backend=get("REPRISE_DELTA_BACKEND", "auto"),
            delta_jars=get("REPRISE_DELTA_JARS", ""),
            delta_packages=get("REPRISE_DELTA_PACKAGES", ""),
            batches_per_job=per_job,
            buckets=_integer("REPRISE_BUCKETS", buckets, 1, MAX_BUCKETS) if buckets else None,
            exchange=get("REPRISE_EXCHANGE", "direct"),
            kernel_dir=_kernel_dir(env),
            progress=_flag("REPRISE_PROGRESS", env.get("REPRISE_PROGRESS", "")),
            verbose=_flag("REPRISE_VERBOSE", env.get("REPRISE_VERBOSE", "")),
            local_events=local,
        )


def _integer(name: str, text: str, minimum: int, maximum: int | None = None) -> int:
    """The ASCII decimal integer ``text`` of variable ``name``, at least ``minimum`` (and at
    most ``maximum``)."""
    if not re.fullmatch(r"\s*[0-9]+\s*", text) or int(text) < minimum:
        kind = "a positive" if minimum == 1 else "a non-negative"
        raise SettingsError(f"{name}: expected {kind} integer, got {text!r}")
    if maximum is not None and int(text) > maximum:
        raise SettingsError(f"{name}: at most {maximum:,}, got {text.strip()}")
    return int(text)


def _flag(name: str, text: str) -> bool:
    """The on/off variable ``name`` (:data:`FLAGS`; empty: off)."""
    value = FLAGS.get(text.strip().lower()) if text.strip() else False
    if value is None:
        raise SettingsError(f"{name}: expected 1 or 0 (or true/false, yes/no, on/off), "
                            f"got {text!r}")
    return value


def _kernel_dir(env: Mapping[str, str]) -> Path | None:
    """``REPRISE_KERNEL_DIR``, else the user's cache directory (never a shared temporary
    directory: the generated files are imported)."""
    if env.get("REPRISE_KERNEL_DIR"):
        return _own_directory("REPRISE_KERNEL_DIR", Path(env["REPRISE_KERNEL_DIR"]))
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]) / "reprise" / "qre-kernels"
    try:
        return Path.home() / ".cache" / "reprise" / "qre-kernels"
    except RuntimeError:  # no home directory
        return None


def _own_directory(name: str, path: Path) -> Path:
    """``path`` if it is, or can be made, a directory that only this user can write to (the
    Python files written there are imported); SettingsError naming ``name`` otherwise."""
    path = path.expanduser()
    existing = next(p for p in (path, *path.parents) if p.exists() or p == p.parent)
    if not existing.is_dir():
        raise SettingsError(f"{name}: {existing} is not a directory"
                            + ("" if existing == path else f", so {path} cannot be made"))
    if existing == path and not only_mine(path):
        raise SettingsError(f"{name}: {path} can be written by other users; the files written "
                            "there are imported: use a directory of your own")
    return path


def load_settings() -> Settings:
    """The settings of this process's environment."""
    return Settings.from_env(os.environ)

"""The project's settings, read from the environment once (docs: reference/settings).

Every module of ``jobs`` and ``orchestration`` takes its configuration from a :class:`Settings`
(``load_settings()`` for the process's environment); ``engine`` takes what it needs as arguments.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from engine.errors import RepriseError
from engine.own_directory import only_mine

PROJECT_ROOT = Path(__file__).resolve().parents[1]
#: The sample catalog shipped with the code: the catalog of a directory without one of its own.
BUNDLED_CATALOG = PROJECT_ROOT / "schemas"
#: A project's file in its top directory; its optional ``catalog:`` names the catalog directory
#: (relative to the file; default ``schemas``).
PROJECT_FILE = "reprise.yaml"
#: ``REPRISE_DELTA_BACKEND`` values.
BACKENDS = ("auto", "delta-rs", "delta-spark")
#: ``REPRISE_EXCHANGE`` values.
EXCHANGES = ("direct", "spark")
#: Where a replay's bucket tasks run (``REPRISE_ENGINE``, ``reprise replay --engine``).
ENGINES = ("auto", "spark", "driver")
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

    #: ``REPRISE_WAREHOUSE``: where recordings and runs live: a local directory, ``file://DIR``
    #: or ``s3://BUCKET/PREFIX`` (read by :func:`jobs.warehouse_uri.parse_warehouse`).
    warehouse: str = "warehouse"
    #: ``REPRISE_CATALOG``: the catalog directory (recordings/*.yaml, queries/*.yaml); without
    #: it, the current directory's (see :func:`find_catalog`).
    catalog: Path = BUNDLED_CATALOG
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
    #: ``REPRISE_ENGINE``: where a replay's bucket tasks run: ``auto`` (by the run's estimated
    #: cost, see :mod:`jobs.runs.engine_choice`), ``spark`` or ``driver``.
    engine: str = "auto"
    #: ``REPRISE_HANDOVER_AT``: with ``engine`` ``auto``, hand a run over from the driver to
    #: Spark at this batch whatever the estimate (the batches before it in the driver while
    #: Spark starts, the rest on Spark); None: where the estimate says (see
    #: :mod:`jobs.runs.engine_choice`). For tests and measurements.
    handover_at: int | None = None
    #: ``REPRISE_LOCK_LEASE``: seconds a run's lock object on an object-store warehouse holds
    #: without renewal (a holder renews it every quarter of that; one that died blocks the run
    #: this long; see :mod:`jobs.runs.object_lock`).
    lock_lease: int = 60

    @classmethod
    def from_env(cls, env: Mapping[str, str], cwd: Path | None = None) -> Settings:
        """Settings from ``env`` (the catalog found from ``cwd``, default the current
        directory); a malformed value raises :class:`SettingsError` naming it."""
        def get(name: str, default: str) -> str:
            return env.get(name) or default

        per_job = _integer("REPRISE_BATCHES_PER_JOB", get("REPRISE_BATCHES_PER_JOB", "32"), 1)
        buckets = get("REPRISE_BUCKETS", "")
        handover = get("REPRISE_HANDOVER_AT", "")
        for name, value, allowed in (
                ("REPRISE_DELTA_BACKEND", get("REPRISE_DELTA_BACKEND", "auto"), BACKENDS),
                ("REPRISE_EXCHANGE", get("REPRISE_EXCHANGE", "direct"), EXCHANGES),
                ("REPRISE_ENGINE", get("REPRISE_ENGINE", "auto"), ENGINES)):
            if value not in allowed:
                raise SettingsError(f"{name}: unknown value {value!r}; expected one of "
                                    f"{', '.join(allowed)}")
        return cls(
            warehouse=get("REPRISE_WAREHOUSE", "warehouse"),
            catalog=find_catalog(env, Path.cwd() if cwd is None else cwd).path,
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
            engine=get("REPRISE_ENGINE", "auto"),
            handover_at=_integer("REPRISE_HANDOVER_AT", handover, 0) if handover else None,
            lock_lease=_integer("REPRISE_LOCK_LEASE", get("REPRISE_LOCK_LEASE", "60"), 1),
        )


@dataclass(frozen=True)
class CatalogChoice:
    """The catalog directory a process uses and where it was found: ``REPRISE_CATALOG``, the
    project file, the current directory's ``schemas/`` or (``bundled``) the sample catalog."""

    path: Path
    origin: str

    @property
    def bundled(self) -> bool:
        """Whether no catalog was given or found, so the bundled sample is used."""
        return self.origin == "bundled"


def find_catalog(env: Mapping[str, str], cwd: Path) -> CatalogChoice:
    """The catalog directory: ``REPRISE_CATALOG``; else the one :data:`PROJECT_FILE` in ``cwd``
    names; else ``cwd/schemas`` if it is a directory; else :data:`BUNDLED_CATALOG`."""
    if env.get("REPRISE_CATALOG"):
        return CatalogChoice(Path(env["REPRISE_CATALOG"]), "REPRISE_CATALOG")
    project = cwd / PROJECT_FILE
    if project.is_file():
        return CatalogChoice(project.parent / _project_catalog(project), PROJECT_FILE)
    if (cwd / "schemas").is_dir():
        return CatalogChoice(cwd / "schemas", "schemas/")
    return CatalogChoice(BUNDLED_CATALOG, "bundled")


def catalog_notice(env: Mapping[str, str], cwd: Path) -> str | None:
    """The line a command prints (on stderr) when it falls back to the bundled sample catalog
    because ``cwd`` has no catalog of its own and none is given; None otherwise."""
    choice = find_catalog(env, cwd)
    if not choice.bundled or cwd.resolve() == PROJECT_ROOT:
        return None
    return (f"using the sample catalog {choice.path} (no schemas/ or {PROJECT_FILE} here; "
            "`reprise init DIR` makes a project)")


def _project_catalog(project: Path) -> str:
    """The ``catalog:`` of the project file (default ``schemas``); SettingsError naming the
    file when it is not a YAML mapping with a text ``catalog``."""
    try:
        doc = yaml.safe_load(project.read_text()) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SettingsError(f"{project}: cannot be read as YAML: {problem}") from None
    catalog = doc.get("catalog", "schemas") if isinstance(doc, dict) else None
    if not isinstance(catalog, str) or not catalog.strip():
        raise SettingsError(f"{project}: expected a mapping with `catalog: DIRECTORY`")
    return catalog


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

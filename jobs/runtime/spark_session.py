"""The one place that builds SparkSessions for Reprise.

Defaults suit a laptop or CI box (``local[*]``, UTC, few shuffle partitions). Everything can be
overridden through :class:`~jobs.settings.Settings` (``REPRISE_SPARK_MASTER``,
``REPRISE_SPARK_CONF``, ``REPRISE_DELTA_JARS``, ``REPRISE_DELTA_PACKAGES``, ``REPRISE_VERBOSE``).
With ``REPRISE_DELTA_BACKEND=delta-spark`` and neither Delta variable set, the session loads the
project's pinned Delta jars (:mod:`jobs.runtime.delta_jars`, fetched on first use).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from py4j.protocol import Py4JJavaError
from pyspark import SparkConf, SparkContext
from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

from engine.errors import RepriseError
from jobs.aws_settings import storage_options
from jobs.runtime import class_archive
from jobs.runtime.code_shipping import EXECUTOR_PYTHONPATH, ship_code
from jobs.runtime.delta_jars import project_jars
from jobs.runtime.jvm_stderr import jvm_log_path, launch_quietly
from jobs.runtime.masters import SHUFFLE_PARTITIONS, is_local, unreachable
from jobs.settings import MAX_BUCKETS, Settings, SettingsError, load_settings

LOOPBACK = "127.0.0.1"
#: Errors only (see :func:`session_conf`; ``REPRISE_VERBOSE=1`` keeps Spark's own profile).
QUIET_LOG4J2 = Path(__file__).with_name("log4j2.properties")
DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Keep tables readable by the delta-rs backend (see README, "Delta backends").
    "spark.databricks.delta.properties.defaults.enableDeletionVectors": "false",
    # Delta checkpoints a table after every 10th commit by default, with a Spark job that
    # outlasts the commit many times over; a run commits each table once a batch. Every 100th,
    # as delta-rs does (jobs/storage/log_entries.py).
    "spark.databricks.delta.properties.defaults.checkpointInterval": "100",
}


#: The driver JVM's options on a local master (unless the conf names a compiler level or a
#: collector): the quick compiler only and the serial collector. The JVM then spends less of a
#: small machine's cores on compiling and collecting while it starts (its own work in a replay
#: is launching tasks: the buckets step in Python workers). On a loaded 2-core machine the JVM's
#: part of Spark's start (gateway, context, session) took 26 to 88 % of the time it took without.
QUICK_START_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: The driver's heap on every master: validation and the commits run there.
DRIVER_MEMORY = "4g"
#: SparkContexts this process started (see :func:`session_starts`).
_STARTS = {"count": 0}


def session_starts() -> int:
    """How many times this process started a SparkContext: a process runs its replays (a
    Dagster run's materialisations, ``reprise follow``'s continuations) on one session, so this
    stays 1 after the first start."""
    return _STARTS["count"]


#: Spark's local masters (``local[N]``, ``local[*]``, ``local[N,F]``, ``local[*,F]``, with
#: ``local`` alone one thread) and ``local-cluster[workers,cores,memory MB]``.
LOCAL_MASTER = re.compile(r"local(\[([0-9]+|\*)(\s*,\s*[0-9]+)?\])?")
LOCAL_CLUSTER_MASTER = re.compile(r"local-cluster\[\s*[0-9]+\s*,\s*[0-9]+\s*,\s*[0-9]+\s*\]")


def check_master(master: str) -> None:
    """Raise SettingsError naming REPRISE_SPARK_MASTER when ``master`` starts with ``local`` but
    is not one of Spark's local masters, or asks for no threads, failures or workers."""
    if not master.startswith("local"):
        return  # Spark's launcher names any other malformed URL (see get_spark)
    if not (LOCAL_MASTER.fullmatch(master) or LOCAL_CLUSTER_MASTER.fullmatch(master)):
        raise SettingsError(
            f"REPRISE_SPARK_MASTER: {master!r} is not a local master; expected local, local[N], "
            "local[*], local[N,F], local[*,F] or local-cluster[W,C,M] (N, F, W, C, M positive "
            "integers)")
    if any(int(n) == 0 for n in re.findall(r"[0-9]+", master)):
        raise SettingsError(f"REPRISE_SPARK_MASTER: {master!r} asks for 0 threads, failures or "
                            "workers; expected positive integers")


def _local_cores(master: str) -> int | None:
    """The threads of a local master (checked by :func:`check_master`), else None."""
    match = LOCAL_MASTER.fullmatch(master) if is_local(master) else None
    if match is None:
        return None
    threads = match.group(2) or "1"
    return (os.cpu_count() or 1) if threads == "*" else int(threads)


def _shuffle_partitions(conf: Mapping[str, str]) -> None:
    """Raise SettingsError unless ``REPRISE_SPARK_CONF``'s shuffle partition count (``conf``)
    is an integer from 1 to :data:`MAX_BUCKETS`."""
    value = conf.get(SHUFFLE_PARTITIONS)
    if value is not None and not (re.fullmatch(r"[0-9]+", value)
                                  and 1 <= int(value) <= MAX_BUCKETS):
        raise SettingsError(f"REPRISE_SPARK_CONF: {SHUFFLE_PARTITIONS} must be an integer from 1 "
                            f"to {MAX_BUCKETS:,}, got {value!r}")


def parse_conf(text: str) -> dict[str, str]:
    """Parse ``"a=1; b=2"`` into a dict; a malformed pair raises SettingsError naming it."""
    conf: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in text.split(";"))):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SettingsError(f"REPRISE_SPARK_CONF: expected key=value, got {pair!r}")
        conf[key.strip()] = value.strip()
    return conf


def delta_jars_configured(conf: Mapping[str, str]) -> bool:
    """True when the conf asks Spark to load the Delta jars (by path or by Maven coordinates)."""
    return any("delta-spark" in conf.get(k, "") for k in ("spark.jars", "spark.jars.packages"))


def session_conf(master: str | None = None, conf: Mapping[str, str] | None = None,
                 settings: Settings | None = None) -> tuple[str, dict[str, str]]:
    """Resolve the master URL and the full conf from defaults, settings and explicit values."""
    settings = load_settings() if settings is None else settings
    master = master or settings.spark_master
    check_master(master)
    resolved = {
        "spark.pyspark.driver.python": sys.executable,
        "spark.driver.memory": DRIVER_MEMORY,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.adaptive.enabled": "false",
        # Python workers without Spark's archives on their path (see jobs.runtime.worker_daemon)
        "spark.python.daemon.module": "jobs.runtime.worker_daemon",
    }
    cores = _local_cores(master)
    if cores is not None:
        # The workers run on this machine: the driver's interpreter (unless configured).
        resolved["spark.pyspark.python"] = sys.executable
        resolved["spark.sql.shuffle.partitions"] = str(settings.buckets or max(2, cores))
        resolved["spark.default.parallelism"] = str(max(2, cores))
        # The driver's RPC and block manager ports have no authentication: loopback only.
        resolved["spark.driver.bindAddress"] = LOOPBACK
        resolved["spark.driver.host"] = LOOPBACK
    elif settings.buckets:
        resolved["spark.sql.shuffle.partitions"] = str(settings.buckets)
    if cores is None:  # executors elsewhere reach an object-store warehouse with these (Spark
        # redacts the values of names holding "secret" or "token" in its UI and logs)
        resolved.update({f"spark.executorEnv.{name}": value
                         for name, value in storage_options().items()})
    if settings.delta_jars:
        missing = [j for j in settings.delta_jars.split(",") if not Path(j.strip()).is_file()]
        if missing:  # Spark would start without them and `auto` would quietly pick delta-rs
            raise SettingsError(f"REPRISE_DELTA_JARS: no such file {missing[0].strip()!r} "
                                "(comma-separated local paths of the Delta Spark jars)")
        resolved["spark.jars"] = settings.delta_jars
    elif settings.delta_backend == "delta-spark" and not settings.delta_packages:
        resolved["spark.jars"] = ",".join(str(jar) for jar in project_jars())  # (cached)
    if settings.delta_packages:
        resolved["spark.jars.packages"] = settings.delta_packages
    from_env = parse_conf(settings.spark_conf)
    _shuffle_partitions(from_env)
    resolved.update(from_env)
    resolved.update(conf or {})
    if cores is None:  # the daemon module comes with the shipped code (jobs.runtime.code_shipping)
        paths = [EXECUTOR_PYTHONPATH, resolved.get("spark.executorEnv.PYTHONPATH", "")]
        resolved["spark.executorEnv.PYTHONPATH"] = os.pathsep.join(
            dict.fromkeys(p for p in paths if p))
    options = resolved.get("spark.driver.extraJavaOptions", "")
    if cores is not None and not re.search(r"TieredStopAtLevel|-XX:[+-]Use\w*GC", options):
        options = f"{QUICK_START_JVM} {options}".strip()
    if "Archive" not in options:  # (unless the conf makes or names a class archive itself)
        options = f"{class_archive.java_option()} {options}".strip()
    if not settings.verbose:
        options = f"-Dlog4j2.configurationFile=file:{QUIET_LOG4J2} {options}".strip()
    if options:
        resolved["spark.driver.extraJavaOptions"] = options
    if delta_jars_configured(resolved):
        for key, value in DELTA_CONF.items():
            resolved.setdefault(key, value)
    return master, resolved


def get_spark(master: str | None = None, conf: Mapping[str, str] | None = None,
              settings: Settings | None = None, launch_only: bool = False,
              on_context: Callable[[SparkContext], None] | None = None
              ) -> SparkSession | None:
    """Return the process's SparkSession, creating it from :func:`session_conf` if needed
    (``launch_only``: only launch the driver JVM and its gateway, quietly, and return None; the
    session is made by a later call, e.g. in another thread; ``on_context``: called with a new
    context before the session is made on it).

    The executors' Python is ``spark.pyspark.python`` when the conf names one, else (cluster
    masters) the driver's ``PYSPARK_PYTHON``, else the driver's interpreter path; PySpark hands
    that path to every executor. On a cluster master the project's code is shipped to the
    executors (:func:`jobs.runtime.code_shipping.ship_code`).
    """
    settings = load_settings() if settings is None else settings
    master, resolved = session_conf(master, conf, settings)
    python = resolved.get("spark.pyspark.python") or os.environ.get("PYSPARK_PYTHON") \
        or sys.executable
    resolved["spark.pyspark.python"] = python
    os.environ["PYSPARK_PYTHON"] = python  # what PySpark sends to the executors
    launch = SparkConf().setMaster(master).setAppName("reprise").setAll(list(resolved.items()))
    log = jvm_log_path()
    start = log.stat().st_size if log.exists() else 0
    fresh = SparkContext._active_spark_context is None
    try:
        if SparkContext._gateway is None:  # the JVM, with its stderr in the log (unless verbose)
            if settings.verbose:
                SparkContext._ensure_initialized(conf=launch)
            else:
                launch_quietly(launch)
        if launch_only:
            return None
        if fresh:  # the context from the conf; the session without options, so that its SQL
            # state (parser, analyser, catalog) is built on its first use, not here: a replay on
            # the direct exchange runs RDD jobs only (it takes the conf's spark.sql.* then)
            context = SparkContext.getOrCreate(launch)
            if on_context is not None:
                on_context(context)
            spark = SparkSession.builder.getOrCreate()
        else:
            builder = SparkSession.builder.master(master).appName("reprise")
            for key, value in resolved.items():
                builder = builder.config(key, value)
            spark = builder.getOrCreate()
        if not settings.verbose:
            spark.sparkContext.setLogLevel("ERROR")
        if not is_local(spark.sparkContext.master):
            ship_code(spark)
    except PySparkRuntimeError as exc:  # the JVM exited at launch (a bad master or conf)
        archive = class_archive.java_option()
        if archive and archive in resolved.get("spark.driver.extraJavaOptions", ""):
            with class_archive.left_out():  # (raises the same error if the archive was not it)
                spark = get_spark(master, conf, settings, launch_only, on_context)
            class_archive.discard()  # it started without: a damaged archive must not stay
            return spark
        why = "" if settings.verbose else _jvm_failure(log, start)
        where = "above" if settings.verbose else f"in {log}"
        raise SparkStartError(
            f"Spark did not start with master {master!r} ({', '.join(_start_inputs(settings))})"
            f": {why or exc}; the JVM's output is {where}") from exc
    except Py4JJavaError as exc:  # the context stopped while the session was being made
        context = SparkContext._active_spark_context
        if context is None or not context._jsc.sc().isStopped():
            raise
        raise unreachable(master, settings.verbose) from exc
    _STARTS["count"] += fresh
    return spark


class SparkStartError(RepriseError):
    """The JVM exited before the session started; the message names the master and why."""


def _start_inputs(settings: Settings) -> list[str]:
    """The variables a failed start can come from: the master's, and each other one set."""
    return ["REPRISE_SPARK_MASTER", *(name for name, value in (
        ("REPRISE_SPARK_CONF", settings.spark_conf), ("REPRISE_DELTA_JARS", settings.delta_jars),
        ("REPRISE_DELTA_PACKAGES", settings.delta_packages)) if value)]


def _jvm_failure(log: Path, start: int) -> str:
    """The first line the failed launch wrote to ``log`` after byte ``start`` that is neither a
    warning nor a stack frame ("" if none)."""
    try:
        with log.open("rb") as f:
            f.seek(start)
            lines = f.read(65_536).decode(errors="replace").splitlines()
    except OSError:
        return ""
    return next((line.removeprefix('Exception in thread "main" ').strip() for line in lines
                 if line.strip() and not line[0].isspace() and not line.startswith("WARNING")),
                "")


def delta_jars_loadable(spark: SparkSession) -> bool:
    """Probe the JVM for the Delta classes (cheap; never touches the catalog)."""
    jvm = spark.sparkContext._jvm
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName("io.delta.tables.DeltaTable", False, loader)
    except Exception:
        return False
    ext = spark.conf.get("spark.sql.extensions", "") or ""
    return "DeltaSparkSessionExtension" in ext

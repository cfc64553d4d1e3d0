"""Where the JVM's own output goes when Spark starts quietly: a log file, not the terminal.

The JVM inherits the process's stdout and stderr when PySpark launches it; a few lines it prints
before any logging is configured (``WARNING: Using incubator modules``, from the module system)
cannot be turned off by a log level, so the JVM is launched with both pointed at a log file (the
process's own streams are left alone, so Spark can start in a background thread while the
command writes to the terminal, and a caller reading the command's output is not held open by
the JVM, which outlives the command by its shutdown).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway

from jobs.runtime import early_launch


def jvm_log_path() -> Path:
    """``reprise-jvm-<uid>.log`` in the temporary directory (appended to by every command)."""
    return Path(tempfile.gettempdir()) / f"reprise-jvm-{os.getuid()}.log"


def launch_quietly(conf: SparkConf) -> None:
    """Launch the driver JVM and its Py4J gateway for ``conf`` with the JVM's stdout and stderr
    appended to :func:`jvm_log_path`, unless a gateway is up already (after waiting for a launch
    :mod:`jobs.runtime.early_launch` began)."""
    early_launch.wait()
    if SparkContext._gateway is not None:
        return
    fd = os.open(jvm_log_path(), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "ab") as log:
        gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
    SparkContext._ensure_initialized(gateway=gateway, conf=conf)

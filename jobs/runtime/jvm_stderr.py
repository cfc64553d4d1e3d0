"""Where the JVM's own stderr goes when Spark starts quietly: a log file, not the terminal.

The JVM inherits the process's stderr when PySpark launches it; a few lines it prints before
any logging is configured (``WARNING: Using incubator modules``, from the module system) cannot
be turned off by a log level, so the launch happens with stderr pointed at a log file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def jvm_log_path() -> Path:
    """``reprise-jvm-<uid>.log`` in the temporary directory (appended to by every command)."""
    return Path(tempfile.gettempdir()) / f"reprise-jvm-{os.getuid()}.log"


@contextmanager
def jvm_stderr_quiet() -> Iterator[None]:
    """Point file descriptor 2 at :func:`jvm_log_path` for the block (the JVM launched in it
    keeps writing there), then restore it."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:  # no JVM is launched
        yield
        return
    saved = os.dup(2)
    log = os.open(jvm_log_path(), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(log, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log)

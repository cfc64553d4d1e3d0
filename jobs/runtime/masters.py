"""Spark masters: whether one is local, and the error of a cluster master that cannot be
reached."""

from __future__ import annotations

from engine.errors import RepriseError
from jobs.runtime.jvm_stderr import jvm_log_path

SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"


def is_local(master: str) -> bool:
    """True for Spark's local masters (``local``, ``local[N]``, ``local[*]``, ``local[N,F]``)."""
    return master == "local" or master.startswith("local[")


class ClusterError(RepriseError):
    """The cluster's SparkContext stopped (e.g. its master was never reached)."""


def unreachable(master: str, verbose: bool) -> ClusterError:
    """The error of a SparkContext that stopped while a command waited for it: on a cluster
    master, the master gave up registering the application ("All masters are unresponsive")."""
    where = "above" if verbose else f"in {jvm_log_path()}"
    return ClusterError(f"the Spark master {master!r} (REPRISE_SPARK_MASTER) could not be reached: "
                        f"the SparkContext stopped before the run started; the JVM's output is "
                        f"{where}")

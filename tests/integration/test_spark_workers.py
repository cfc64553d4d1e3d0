"""Spark's Python workers, as jobs.runtime.spark_session starts them (through
jobs.runtime.worker_daemon)."""

from __future__ import annotations


def test_python_workers_import_nothing_from_archives(spark):
    """Spark puts pyspark.zip, py4j and the spark-core jar on its workers' path, and Python 3.11
    re-reads every archive there before each task (~90 ms of CPU); the workers use the installed
    packages instead, so no archive stays on their path or in their importer cache."""

    def probe(_):  # defined here so that it is pickled by value (tests are not importable)
        import importlib
        import os
        import sys
        import zipimport

        import pyspark

        importlib.invalidate_caches()  # what PySpark's worker calls before every task
        yield ([p for p in sys.path if os.path.isfile(p) and p.endswith((".zip", ".jar"))],
               [p for p, finder in sys.path_importer_cache.items()
                if isinstance(finder, zipimport.zipimporter)],
               pyspark.__file__)

    probes = spark.sparkContext.parallelize([0, 1], 2).mapPartitions(probe).collect()
    assert len(probes) == 2
    for archives, zipped, origin in probes:
        assert archives == []
        assert zipped == []
        assert ".zip" not in origin


def test_python_workers_start_with_the_engine_imported(spark):
    """The daemon imports the engine before it forks: a task finds the daemon's preload marker
    set by another process (its parent), the modules already loaded and frozen."""

    def probe(_):
        import gc
        import os
        import sys

        daemon = sys.modules.get("jobs.runtime.worker_daemon")
        yield (daemon is not None and daemon.PRELOADED_BY, os.getpid(),
               [m for m in ("engine.qre", "engine.windows", "jobs.execution.keyed_steps", "numba")
                if m in sys.modules], gc.get_freeze_count())

    probes = spark.sparkContext.parallelize([0, 1], 2).mapPartitions(probe).collect()
    assert len(probes) == 2
    for preloaded_by, pid, loaded, frozen in probes:
        assert preloaded_by and preloaded_by != pid
        assert loaded == ["engine.qre", "engine.windows", "jobs.execution.keyed_steps", "numba"]
        assert frozen > 0  # the daemon's preload, out of the worker's collections

"""PySpark's Python worker daemon: started without Spark's archives on the module path, and warm.

Spark starts its Python workers with ``pyspark.zip``, ``py4j-*.zip`` and the spark-core jar first
on ``PYTHONPATH``, and PySpark's worker calls ``importlib.invalidate_caches()`` before every task.
On Python 3.10 and 3.11 that re-reads the whole directory of every archive on the path and of
every package imported from one (CPython gh-103200, fixed in 3.12): about 90 ms of CPU per task
here, more than a small task's own work. The same PySpark and py4j are installed in the
environment, so this daemon drops the archives from the path before it imports PySpark; the
workers it forks inherit the path.

The daemon also imports the modules every task needs (pandas, pyarrow, numpy, numba, the engine's
families and :mod:`jobs.execution.keyed_steps`) once, before it forks any worker: each worker then
starts with
them loaded instead of spending a second importing them. Forking is safe only from a process with
a single thread, so the daemon first turns off the threads those libraries would start at import
(OpenBLAS's pool, the background purge threads of pyarrow's and deltalake's jemalloc; the workers
inherit these settings) and the preloaded modules start no other thread (numba's threading layer
and pyarrow's thread pools start on first use). Last, it moves the objects the imports made
(about 126,000) into the collector's permanent generation (``gc.freeze()``), so a full collection
in a worker no longer walks them: each took about 60 ms, and a worker makes one every few tasks
(the 32 standalone runs of ``benchmarks.shared`` took a quarter less time). Selected by
``spark.python.daemon.module`` (see :mod:`jobs.runtime.spark_session`).
"""

from __future__ import annotations

import gc
import importlib
import os
import sys

#: Modules imported before the first fork, in this order.
PRELOAD = ("numpy", "pandas", "pyarrow", "pyarrow.parquet", "pyarrow.compute", "numba",
           "engine.registry", "engine.windows", "engine.qre", "engine.spj", "engine.derive",
           "jobs.execution.keyed_steps", "jobs.execution.direct_exchange",
           "jobs.execution.spark_exchange", "jobs.execution.derived_columns")
#: Settings that keep the preloaded libraries from starting threads (a user's value wins).
SINGLE_THREADED = {
    "OPENBLAS_NUM_THREADS": "1",  # numpy's BLAS: no thread pool started at import
    "JE_ARROW_MALLOC_CONF": "background_thread:false",  # pyarrow's jemalloc
    "_RJEM_MALLOC_CONF": "background_thread:false",  # deltalake's jemalloc
}
#: The process that preloaded the modules (a worker's own pid differs: it was forked after).
PRELOADED_BY: int | None = None


def without_archives(path: list[str]) -> list[str]:
    """The entries of a module search path that are not archive files (zip or jar)."""
    return [p for p in path if not (os.path.isfile(p) and p.endswith((".zip", ".jar")))]


def preload(modules: tuple[str, ...] = PRELOAD) -> list[str]:
    """Import ``modules`` (after the single-thread settings) and freeze what they made out of the
    collector's way; returns those that could not be imported (e.g. the project is not on an
    executor's path yet: its tasks import it later)."""
    global PRELOADED_BY
    for name, value in SINGLE_THREADED.items():
        os.environ.setdefault(name, value)
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    PRELOADED_BY = os.getpid()
    gc.freeze()
    return missing


if __name__ == "__main__":
    kept = without_archives(sys.path)
    for entry in set(sys.path) - set(kept):
        sys.path_importer_cache.pop(entry, None)
    sys.path[:] = kept
    # the tasks read the marker from this module, not from __main__
    importlib.import_module("jobs.runtime.worker_daemon").preload()
    from pyspark import daemon

    daemon.manager()

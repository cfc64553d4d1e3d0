"""PySpark's Python worker daemon, started without the archives Spark puts on the module path.

Spark starts its Python workers with ``pyspark.zip``, ``py4j-*.zip`` and the spark-core jar first
on ``PYTHONPATH``, and PySpark's worker calls ``importlib.invalidate_caches()`` before every task.
On Python 3.10 and 3.11 that re-reads the whole directory of every archive on the path and of
every package imported from one (CPython gh-103200, fixed in 3.12): about 90 ms of CPU per task
here, more than a small task's own work. The same PySpark and py4j are installed in the
environment, so this daemon drops the archives from the path before it imports PySpark; the
workers it forks inherit the path. Selected by ``spark.python.daemon.module`` (see
:mod:`jobs.spark`).
"""

from __future__ import annotations

import os
import sys


def without_archives(path: list[str]) -> list[str]:
    """The entries of a module search path that are not archive files (zip or jar)."""
    return [p for p in path if not (os.path.isfile(p) and p.endswith((".zip", ".jar")))]


if __name__ == "__main__":
    kept = without_archives(sys.path)
    for entry in set(sys.path) - set(kept):
        sys.path_importer_cache.pop(entry, None)
    sys.path[:] = kept
    from pyspark import daemon

    daemon.manager()

"""How many key buckets a run gets: ``REPRISE_BUCKETS``, else the cluster's executor cores.

A job runs one task per core, each stepping a range of consecutive buckets
(:func:`jobs.execution.direct_exchange.task_groups`); by default a run gets as many buckets as
the cluster runs tasks at once. On a local master that is the session's parallelism (its
cores); on a cluster master it is known once the executors have registered, so the first
measure waits for them (briefly: until their number stops changing).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from jobs.runtime.lazy_session import not_started
from jobs.runtime.masters import SHUFFLE_PARTITIONS, is_local, unreachable
from jobs.settings import MAX_BUCKETS, Settings

#: The longest wait for a cluster's first executor, and how long their number must stay the
#: same before it is taken as the cluster's size (seconds).
FIRST_EXECUTOR_WAIT_S = 60.0
SETTLE_S = 2.0


def executor_count(spark: SparkSession) -> int:
    """Executors registered with the driver now (the driver's own block manager left out)."""
    return max(0, spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1)


def wait_for_executors(count: Callable[[], int], clock: Callable[[], float] = time.monotonic,
                       sleep: Callable[[float], None] = time.sleep,
                       first_wait_s: float = FIRST_EXECUTOR_WAIT_S,
                       settle_s: float = SETTLE_S) -> int:
    """Poll ``count`` until it is positive and has not changed for ``settle_s``, or until
    ``first_wait_s`` passed without any executor; return the last count."""
    start = clock()
    last, since = count(), start
    while True:
        now = clock()
        if last > 0 and now - since >= settle_s:
            return last
        if last == 0 and now - start >= first_wait_s:
            return 0
        sleep(0.25)
        current = count()
        if current != last:
            last, since = current, clock()


def bucket_count(spark: SparkSession, settings: Settings) -> int:
    """The key buckets of a new run: ``settings.buckets``, else the executor cores (local
    masters: the session's default parallelism). On a cluster master whose shuffle partition
    count was not configured, the session's is set to the same number (Spark's default of 200
    would make every shuffle of a replay 200 tasks)."""
    if settings.buckets:
        return settings.buckets
    lazy = not_started(spark)
    if lazy and (local := lazy.shuffle_partitions()):  # a local master, without starting it
        return min(local, MAX_BUCKETS)
    sc = spark.sparkContext
    try:
        if not is_local(sc.master):
            wait_for_executors(lambda: executor_count(spark))
        cores = max(2, sc.defaultParallelism)
    except Py4JJavaError as exc:
        if not sc._jsc.sc().isStopped():
            raise
        raise unreachable(sc.master, settings.verbose) from exc
    if not is_local(sc.master) and not sc.getConf().contains(SHUFFLE_PARTITIONS):
        spark.conf.set(SHUFFLE_PARTITIONS, str(cores))
    return min(cores, MAX_BUCKETS)

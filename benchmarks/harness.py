"""What the Spark benchmarks share: a session with a scratch directory, the vitals recording,
and median timings of replays and of Spark jobs written to the ``noop`` sink."""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from engine.catalog import Catalog
from jobs.recordings.store import generate_recording
from jobs.replay import Replay, RunInfo
from jobs.spark import get_spark
from jobs.storage import DeltaStorage, open_storage
from jobs.warehouse import Warehouse

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Bench:
    """A Spark session, its storage and a scratch directory removed at the end."""

    spark: SparkSession
    storage: DeltaStorage
    root: Path

    def vitals(self, catalog: Catalog, name: str, events: int, keys: int, commits: int
               ) -> Warehouse:
        """A warehouse ``name`` holding ``events`` generated vitals events (seed 1)."""
        warehouse = Warehouse(self.root / name)
        generate_recording(self.storage, warehouse, catalog, "vitals", keys=keys, events=events,
                           seed=1, commits=commits)
        return warehouse


@contextmanager
def bench(master: str = "local[2]") -> Iterator[Bench]:
    spark = get_spark(master)
    root = Path(tempfile.mkdtemp(prefix="reprise-bench-"))
    try:
        yield Bench(spark, open_storage(spark), root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def median_s(work: Callable[[], object], runs: int) -> float:
    """Median wall-clock seconds of ``runs`` calls of ``work``."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def noop_s(job: DataFrame, runs: int) -> float:
    """Median seconds of ``job`` written to Spark's ``noop`` sink, after one warm-up run."""
    job.write.format("noop").mode("overwrite").save()
    return median_s(lambda: job.write.format("noop").mode("overwrite").save(), runs)


def replay_s(replay: Replay, query: str, runs: int, plan: str | None = None
             ) -> tuple[float, RunInfo, pa.Table]:
    """Median seconds of ``runs`` fresh replays of ``query`` (each a new run; prepare is not
    timed), with the last run's description and manifest."""
    times, last = [], None
    for _ in range(runs):
        info = replay.prepare(query, plan=plan, run_id=f"bench-{uuid.uuid4().hex[:8]}")
        started = time.perf_counter()
        manifest = replay.run(info)
        times.append(time.perf_counter() - started)
        last = (info, manifest)
    return statistics.median(times), *last

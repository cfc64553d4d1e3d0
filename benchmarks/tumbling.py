"""Benchmark: tumbling one-minute windows per patient over the vitals recording.

Replays N events (default 1M, 1000 patients) in 20 micro-batches (one per Delta commit) and
compares the total replay time (median of 3 runs) with one Spark batch job computing the same
aggregates over the same data (median of 5), in the same process. Also measures the per-batch
fixed overhead (a 20-batch replay of a tiny recording). Run with ``make bench`` or
``python -m benchmarks.tumbling [--events N]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from pyspark.sql import functions as F

from engine.catalog import load_catalog
from jobs.recordings.store import generate_recording
from jobs.replay import Replay
from jobs.spark import get_spark
from jobs.storage import open_storage
from jobs.warehouse import Warehouse

ROOT = Path(__file__).resolve().parents[1]
QUERY = "vitals_hr_1m"


def spark_batch_job(spark, storage, path: str) -> float:
    """Median seconds (5 runs) of Spark's own groupBy(key, window) aggregation of the recording."""
    df = storage.read(path)
    job = (df.groupBy("patient_id", F.window("ts", "1 minute"))
           .agg(F.count("*").alias("readings"), F.avg("heart_rate").alias("hr_avg"),
                F.min("heart_rate").alias("hr_min"), F.max("heart_rate").alias("hr_max"),
                F.min("spo2").alias("spo2_min")))
    job.write.format("noop").mode("overwrite").save()  # warm-up
    times = []
    for _ in range(5):
        started = time.perf_counter()
        job.write.format("noop").mode("overwrite").save()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def timed_replay(replay: Replay, run_id: str) -> tuple[float, int]:
    info = replay.prepare(QUERY, plan="commit", run_id=run_id)
    started = time.perf_counter()
    replay.run(info)
    return time.perf_counter() - started, info.batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()

    spark = get_spark(args.master)
    storage = open_storage(spark)
    catalog = load_catalog(ROOT / "schemas")
    root = Path(tempfile.mkdtemp(prefix="reprise-bench-"))
    try:
        big, tiny = Warehouse(root / "big"), Warehouse(root / "tiny")
        generate_recording(storage, big, catalog, "vitals", keys=args.keys, events=args.events,
                           seed=1, commits=args.batches)
        generate_recording(storage, tiny, catalog, "vitals", keys=10, events=args.batches * 10,
                           seed=1, commits=args.batches)
        timed_replay(Replay(spark, storage, tiny, catalog), "warm-up")
        overhead_s, _ = timed_replay(Replay(spark, storage, tiny, catalog), "overhead")
        runs = [timed_replay(Replay(spark, storage, big, catalog), f"big-{i}") for i in range(3)]
        replay_s, batches = statistics.median(s for s, _ in runs), runs[0][1]
        batch_s = spark_batch_job(spark, storage, big.recording("vitals"))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result = {
        "events": args.events, "keys": args.keys, "batches": batches, "master": args.master,
        "replay_s": round(replay_s, 2), "events_per_s": round(args.events / replay_s),
        "per_batch_overhead_s": round(overhead_s / (batches + 1), 3),
        "spark_batch_job_s": round(batch_s, 2), "ratio": round(replay_s / batch_s, 2),
    }
    print(json.dumps(result, indent=1))
    print(f"replay {args.events:,} events in {batches} batches: {replay_s:.1f} s "
          f"({result['events_per_s']:,} events/s); Spark batch job {batch_s:.1f} s; "
          f"ratio {result['ratio']} (target <= 3); per-batch overhead "
          f"{result['per_batch_overhead_s']} s (target < 0.5)")


if __name__ == "__main__":
    main()

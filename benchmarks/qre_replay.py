"""Benchmark: end-to-end QRE replay on Spark vs a pass-through ``applyInPandas`` on the same data.

Replays the episode query (``vitals_episode_max_avg``: running average of the peak heart rate of
each completed tachycardia episode, per patient) over N vitals events (default 1M, 1000 patients,
20 commits, one batch per commit) and compares it, in the same process, with the floor any
Python-worker replay pays: the same events, read with their arrival sequence and grouped by the
same key buckets, handed to a Python function that returns them unchanged (noop sink).
Run with ``python -m benchmarks.qre_replay [--events N]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from engine.catalog import load_catalog
from jobs.arrival import input_index, sequenced
from jobs.keyed import BUCKET, bucketed
from jobs.recordings.store import generate_recording
from jobs.replay import Replay
from jobs.spark import get_spark
from jobs.storage import open_storage
from jobs.warehouse import Warehouse

ROOT = Path(__file__).resolve().parents[1]
QUERY = "vitals_episode_max_avg"


def pass_through_s(replay: Replay, path: str, buckets: int) -> float:
    """Median seconds (3 runs) of reading the events and round-tripping them through Python."""
    storage = replay.storage
    version = storage.version(path)
    files = input_index(storage, path, version)
    events = sequenced(storage, path, version, [asdict(f) for f in files], 0,
                       sum(f.rows for f in files), "ts")
    grouped = bucketed(events, "patient_id", buckets)

    def identity(pdf: pd.DataFrame) -> pd.DataFrame:
        return pdf

    job = grouped.groupBy(BUCKET).applyInPandas(identity, grouped.schema)
    job.write.format("noop").mode("overwrite").save()  # warm-up
    times = []
    for _ in range(3):
        started = time.perf_counter()
        job.write.format("noop").mode("overwrite").save()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    spark = get_spark(args.master)
    storage = open_storage(spark)
    catalog = load_catalog(ROOT / "schemas")
    root = Path(tempfile.mkdtemp(prefix="reprise-bench-"))
    try:
        big, warm = Warehouse(root / "big"), Warehouse(root / "warm")
        generate_recording(storage, big, catalog, "vitals", keys=args.keys, events=args.events,
                           seed=1, commits=20)
        generate_recording(storage, warm, catalog, "vitals", keys=10, events=2_000, seed=1,
                           commits=2)
        warm_replay = Replay(spark, storage, warm, catalog)
        warm_replay.run(warm_replay.prepare(QUERY, plan="commit"))  # workers, imports, kernels
        replay = Replay(spark, storage, big, catalog)
        info = replay.prepare(QUERY, plan="commit")
        started = time.perf_counter()
        manifest = replay.run(info).to_pandas()
        replay_s = time.perf_counter() - started
        floor_s = pass_through_s(replay, big.recording("vitals"), info.buckets)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result = {"query": QUERY, "events": args.events, "keys": args.keys, "batches": info.batches,
              "master": args.master, "outputs": int(manifest["rows_out"].sum()),
              "replay_s": round(replay_s, 2), "replay_events_per_s": round(args.events / replay_s),
              "pass_through_s": round(floor_s, 2), "ratio": round(replay_s / floor_s, 2)}
    print(json.dumps(result, indent=1))
    print(f"QRE replay of {args.events:,} events in {info.batches} batches: {replay_s:.1f} s; "
          f"pass-through applyInPandas {floor_s:.1f} s; ratio {result['ratio']} (target <= 2)")


if __name__ == "__main__":
    main()

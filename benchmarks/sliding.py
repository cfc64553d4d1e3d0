"""Benchmark: sliding windows with size / slide = 100 per key, Reprise replay vs Spark window().

Spark implements ``window(ts, size, slide)`` by copying every row into each of its
``size / slide`` windows (Expand); Reprise slices the stream and assembles windows from slices.
Same data (N vitals events, default 1M over 1000 patients), same aggregates, same process.
Run with ``make bench`` or ``python -m benchmarks.sliding [--events N]``.
"""

import argparse
import json
import shutil
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
QUERY = """\
name: bench_sliding
kind: window
input: vitals
lateness: 10s
batch: {{by: commit}}
query:
  window: {{type: sliding, size: {size}s, slide: {slide}s}}
  aggregates: {{readings: count(), hr_avg: avg(heart_rate), hr_min: min(heart_rate),
               hr_max: max(heart_rate)}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--size", type=int, default=500, help="window size in seconds")
    parser.add_argument("--slide", type=int, default=5, help="window slide in seconds")
    args = parser.parse_args()
    spark = get_spark("local[2]")
    storage = open_storage(spark)
    root = Path(tempfile.mkdtemp(prefix="reprise-bench-"))
    try:
        schemas = root / "schemas"
        shutil.copytree(ROOT / "schemas" / "recordings", schemas / "recordings")
        (schemas / "queries").mkdir()
        (schemas / "queries" / "bench.yaml").write_text(
            QUERY.format(size=args.size, slide=args.slide))
        catalog = load_catalog(schemas)
        warehouse = Warehouse(root / "warehouse")
        generate_recording(storage, warehouse, catalog, "vitals", keys=args.keys,
                           events=args.events, seed=1, commits=20)
        warm = Warehouse(root / "warm")
        generate_recording(storage, warm, catalog, "vitals", keys=10, events=2_000, seed=1,
                           commits=2)
        Replay(spark, storage, warm, catalog).run(
            Replay(spark, storage, warm, catalog).prepare("bench_sliding"))  # warm workers
        replay = Replay(spark, storage, warehouse, catalog)
        info = replay.prepare("bench_sliding")
        started = time.perf_counter()
        manifest = replay.run(info).to_pandas()
        replay_s = time.perf_counter() - started
        windows = int(manifest["rows_out"].sum())

        df = storage.read(warehouse.recording("vitals"))
        job = (df.groupBy("patient_id", F.window("ts", f"{args.size} seconds",
                                                 f"{args.slide} seconds"))
               .agg(F.count("*"), F.avg("heart_rate"), F.min("heart_rate"), F.max("heart_rate")))
        storage.read(warm.recording("vitals")).groupBy("patient_id", F.window(
            "ts", f"{args.size} seconds", f"{args.slide} seconds")).count().write.format(
            "noop").mode("overwrite").save()  # warm-up on the small recording
        started = time.perf_counter()
        job.write.format("noop").mode("overwrite").save()
        spark_s = time.perf_counter() - started
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result = {"events": args.events, "keys": args.keys, "size_s": args.size,
              "slide_s": args.slide, "windows": windows, "replay_s": round(replay_s, 2),
              "replay_events_per_s": round(args.events / replay_s),
              "spark_window_s": round(spark_s, 2),
              "spark_events_per_s": round(args.events / spark_s),
              "speedup": round(spark_s / replay_s, 2)}
    print(json.dumps(result, indent=1))
    print(f"sliding {args.size}s/{args.slide}s over {args.events:,} events: Reprise replay "
          f"{replay_s:.1f} s, Spark window() {spark_s:.1f} s: {result['speedup']}x "
          "(target >= 10x)")


if __name__ == "__main__":
    main()

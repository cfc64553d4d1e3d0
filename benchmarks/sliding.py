"""Benchmark: sliding windows with size / slide = 100 per key, Reprise replay vs Spark window().

Spark implements ``window(ts, size, slide)`` by copying every row into each of its
``size / slide`` windows (Expand); Reprise slices the stream and assembles windows from slices.
Same data (N vitals events, default 1M over 1000 patients), same aggregates, same process;
medians of 3 rounds that run each side once in turn, after 1 untimed round.
Run with ``make bench`` or ``python -m benchmarks.sliding [--events N]``.
"""

from __future__ import annotations

import argparse
import json
import shutil

from pyspark.sql import functions as F

from engine.catalog import load_catalog
from jobs.runs.replay import Replay

from .harness import ROOT, ReplayRuns, bench, medians, noop
from .results import command_line, record

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
    with bench() as b:
        schemas = b.root / "schemas"
        shutil.copytree(ROOT / "schemas" / "recordings", schemas / "recordings")
        (schemas / "queries").mkdir()
        (schemas / "queries" / "bench_sliding.yaml").write_text(
            QUERY.format(size=args.size, slide=args.slide))
        catalog = load_catalog(schemas)
        warehouse = b.vitals(catalog, "warehouse", args.events, args.keys, 20)
        replay = ReplayRuns(Replay(b.spark, b.storage, warehouse, catalog), "bench_sliding")
        df = b.storage.read(warehouse.recording("vitals"))
        spark_job = noop(df.groupBy("patient_id", F.window(
            "ts", f"{args.size} seconds", f"{args.slide} seconds")).agg(
            F.count("*"), F.avg("heart_rate"), F.min("heart_rate"), F.max("heart_rate")))
        timed = medians({"replay": replay, "spark": spark_job}, rounds=3, warmups=1)
    seconds, spark_s = timed["replay"], timed["spark"]
    windows = sum(replay.manifest.column("rows_out").to_pylist())
    result = {"events": args.events, "keys": args.keys, "size_s": args.size,
              "slide_s": args.slide, "windows": windows, "replay_s": round(seconds, 2),
              "replay_events_per_s": round(args.events / seconds),
              "spark_window_s": round(spark_s, 2),
              "spark_events_per_s": round(args.events / spark_s),
              "speedup": round(spark_s / seconds, 2)}
    print(json.dumps(result, indent=1))
    record("sliding", command=command_line(),
           data_size={"events": args.events, "keys": args.keys, "size_s": args.size,
                      "slide_s": args.slide},
           medians={"replay_s": seconds, "spark_window_s": spark_s},
           ratio=result["speedup"], target="Spark window() / replay >= 10", extra=result)
    print(f"sliding {args.size}s/{args.slide}s over {args.events:,} events: Reprise replay "
          f"{seconds:.1f} s, Spark window() {spark_s:.1f} s: {result['speedup']}x "
          "(target >= 10x)")


if __name__ == "__main__":
    main()

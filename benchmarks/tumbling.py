"""Benchmark: tumbling one-minute windows per patient over the vitals recording.

Replays N events (default 1M, 1000 patients) in 20 micro-batches (one per Delta commit) and
compares the total replay time with one Spark batch job computing the same aggregates over the
same data, in the same process: medians of 5 rounds that run each side once in turn, after 2
untimed rounds. Also measures the per-batch
fixed overhead (a 20-batch replay of a tiny recording). Run with ``make bench`` or
``python -m benchmarks.tumbling [--events N]``.
"""

from __future__ import annotations

import argparse
import json

from pyspark.sql import functions as F

from engine.catalog import load_catalog
from jobs.runs.replay import Replay

from .harness import ROOT, ReplayRuns, bench, medians, noop
from .results import command_line, record

QUERY = "vitals_hr_1m"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmups", type=int, default=2)
    args = parser.parse_args()
    catalog = load_catalog(ROOT / "schemas")
    with bench(args.master) as b:
        big = b.vitals(catalog, "big", args.events, args.keys, args.batches)
        tiny = b.vitals(catalog, "tiny", args.batches * 10, 10, args.batches)
        df = b.storage.read(big.recording("vitals"))
        replay = ReplayRuns(Replay(b.spark, b.storage, big, catalog), QUERY, plan="commit")
        spark_job = noop(df.groupBy("patient_id", F.window("ts", "1 minute")).agg(
            F.count("*").alias("readings"), F.avg("heart_rate").alias("hr_avg"),
            F.min("heart_rate").alias("hr_min"), F.max("heart_rate").alias("hr_max"),
            F.min("spo2").alias("spo2_min")))
        timed = medians({"replay": replay, "spark": spark_job}, rounds=args.rounds,
                        warmups=args.warmups)
        overhead = medians({"tiny": ReplayRuns(Replay(b.spark, b.storage, tiny, catalog), QUERY,
                                               plan="commit")}, rounds=3)
    seconds, batch_s, info = timed["replay"], timed["spark"], replay.info
    batches = info.batches
    result = {
        "events": args.events, "keys": args.keys, "batches": batches, "master": args.master,
        "buckets": info.buckets, "rounds": args.rounds,
        "replay_s": round(seconds, 2), "events_per_s": round(args.events / seconds),
        "per_batch_overhead_s": round(overhead["tiny"] / (batches + 1), 3),
        "spark_batch_job_s": round(batch_s, 2), "ratio": round(seconds / batch_s, 2),
    }
    print(json.dumps(result, indent=1))
    record("tumbling", command=command_line(),
           data_size={"events": args.events, "keys": args.keys, "batches": batches},
           medians={"replay_s": seconds, "spark_batch_job_s": batch_s,
                    "per_batch_overhead_s": overhead["tiny"] / (batches + 1)},
           ratio=result["ratio"],
           target="replay / Spark batch job <= 2 (windows), <= 3 (platform); "
                  "per-batch overhead < 0.5 s",
           extra=result)
    print(f"replay {args.events:,} events in {batches} batches: {seconds:.2f} s "
          f"({result['events_per_s']:,} events/s); Spark batch job {batch_s:.2f} s; "
          f"ratio {result['ratio']} (targets: <= 3 platform, <= 2 windows); per-batch overhead "
          f"{result['per_batch_overhead_s']} s (target < 0.5)")


if __name__ == "__main__":
    main()

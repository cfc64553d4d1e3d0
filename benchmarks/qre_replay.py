"""Benchmark: end-to-end QRE replay on Spark vs a pass-through ``applyInPandas`` on the same data.

Replays the episode query (``vitals_episode_max_avg``: running average of the peak heart rate of
each completed tachycardia episode, per patient) over N vitals events (default 1M, 1000 patients,
20 commits, one batch per commit) and compares it, in the same process, with the floor any
Python-worker replay pays: the same events, read with their arrival sequence and grouped by the
same key buckets, handed to a Python function that returns them unchanged (noop sink); medians
of 3 rounds that run each side once in turn, after 2 untimed rounds.
Run with ``python -m benchmarks.qre_replay [--events N]``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import asdict

import pandas as pd

from engine.catalog import load_catalog
from jobs.execution.arrival import input_index, sequenced
from jobs.execution.keyed_steps import BUCKET, bucketed
from jobs.runs.replay import Replay

from .harness import ROOT, ReplayRuns, bench, medians, noop
from .results import command_line, record

QUERY = "vitals_episode_max_avg"


def pass_through(replay: Replay, path: str, buckets: int) -> Callable[[], float]:
    """Reading the events and round-tripping them through Python (a work for ``medians``)."""
    storage = replay.storage
    version = storage.version(path)
    files = input_index(storage, path, version)
    events = sequenced(storage, path, version, [asdict(f) for f in files], 0,
                       sum(f.rows for f in files), "ts")
    grouped = bucketed(events, "patient_id", buckets)

    def identity(pdf: pd.DataFrame) -> pd.DataFrame:
        return pdf

    return noop(grouped.groupBy(BUCKET).applyInPandas(identity, grouped.schema))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    catalog = load_catalog(ROOT / "schemas")
    with bench(args.master) as b:
        big = b.vitals(catalog, "big", args.events, args.keys, 20)
        replay = ReplayRuns(Replay(b.spark, b.storage, big, catalog), QUERY, plan="commit")
        buckets = int(b.spark.conf.get("spark.sql.shuffle.partitions"))  # as a run's buckets
        floor = pass_through(replay.replay, big.recording("vitals"), buckets)
        timed = medians({"replay": replay, "floor": floor}, rounds=3)
    seconds, floor_s, info, manifest = timed["replay"], timed["floor"], replay.info, replay.manifest
    result = {"query": QUERY, "events": args.events, "keys": args.keys, "batches": info.batches,
              "master": args.master, "outputs": sum(manifest.column("rows_out").to_pylist()),
              "replay_s": round(seconds, 2), "replay_events_per_s": round(args.events / seconds),
              "pass_through_s": round(floor_s, 2), "ratio": round(seconds / floor_s, 2)}
    print(json.dumps(result, indent=1))
    record("qre_replay", command=command_line(),
           data_size={"events": args.events, "keys": args.keys, "batches": info.batches},
           medians={"replay_s": seconds, "pass_through_s": floor_s},
           ratio=result["ratio"], target="replay / pass-through applyInPandas <= 2",
           extra=result)
    print(f"QRE replay of {args.events:,} events in {info.batches} batches: {seconds:.1f} s; "
          f"pass-through applyInPandas {floor_s:.1f} s; ratio {result['ratio']} (target <= 2)")


if __name__ == "__main__":
    main()

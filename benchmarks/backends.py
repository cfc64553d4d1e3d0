"""Benchmark: the two Delta backends (delta-rs, delta-spark) on the same replays.

In one process (one Spark session that loads the project's Delta jars), each backend gets a
warehouse with the same vitals recording (``--events`` events, 1000 patients, ``--batches``
commits) written by that backend. Then (1) the tumbling replay (one batch per commit) of each
backend in alternating rounds, medians after untimed warm-ups; (2) ``--continuations``
commits of ``--new`` events each appended to both recordings, each followed by a continuation
of each backend's run in turn. Every storage call is timed by its method, so the output says
where the time differs (commits, file lists, versions, reads). ``python -m benchmarks.backends``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pyarrow as pa

from benchmarks.results import command_line, record
from engine.catalog import load_catalog
from jobs.recordings.store import generate_recording
from jobs.runs.continuation import continue_query
from jobs.runs.replay import Replay
from jobs.runtime.spark_session import get_spark
from jobs.settings import load_settings
from jobs.storage import DeltaStorage, open_storage
from jobs.warehouse import Warehouse

from .continuation import new_commit
from .harness import ROOT, ReplayRuns, medians, scratch_parent

QUERY = "vitals_hr_1m"
BACKENDS = ("delta-rs", "delta-spark")


class TimedStorage:
    """A storage whose public calls add their seconds to ``seconds`` by method name (calls a
    backend makes to itself are not counted twice)."""

    def __init__(self, inner: DeltaStorage):
        self.inner = inner
        self.seconds: Counter[str] = Counter()

    def __getattr__(self, name: str):
        attribute = getattr(self.inner, name)
        if name.startswith("_") or not callable(attribute):
            return attribute

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return attribute(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - started

        return timed


def continuations(replays: dict[str, Replay], first: dict[str, pa.Table], count: int
                  ) -> dict[str, float]:
    """Seconds of ``count`` continuations of each backend's run, the backends in turn after
    each new commit (the same events appended to each backend's recording)."""
    total = dict.fromkeys(replays, 0.0)
    for k in range(count):
        for name, replay in replays.items():
            new_commit(replay, first[name], k)
            started = time.perf_counter()
            result = continue_query(replay, QUERY, run_id="base", log=lambda line: None)
            total[name] += time.perf_counter() - started
            assert result.segment is not None and not result.fresh_reason
    return total


def where(seconds: dict[str, Counter[str]], top: int = 6) -> dict[str, dict[str, float]]:
    """The storage methods whose total seconds differ most between the backends."""
    methods = set().union(*seconds.values())

    def gap(method: str) -> float:
        return abs(seconds["delta-spark"][method] - seconds["delta-rs"][method])

    return {m: {name: round(seconds[name][m], 2) for name in seconds}
            for m in sorted(methods, key=gap, reverse=True)[:top]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--continuations", type=int, default=10)
    parser.add_argument("--new", type=int, default=10_000, help="events per new commit")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmups", type=int, default=1)
    args = parser.parse_args()
    catalog = load_catalog(ROOT / "schemas")
    spark = get_spark(args.master, settings=replace(load_settings(), delta_backend="delta-spark"))
    root = Path(tempfile.mkdtemp(prefix="reprise-bench-", dir=scratch_parent()))
    try:
        storages = {name: TimedStorage(open_storage(spark, name)) for name in BACKENDS}
        replays: dict[str, Replay] = {}
        for name, storage in storages.items():
            warehouse = Warehouse(root / name)
            generate_recording(storage.inner, warehouse, catalog, "vitals", keys=args.keys,
                               events=args.events, seed=1, commits=args.batches)
            replays[name] = Replay(spark, storage, warehouse, catalog)  # type: ignore[arg-type]
        for storage in storages.values():
            storage.seconds.clear()
        runs = {name: ReplayRuns(replay, QUERY, plan="commit") for name, replay in replays.items()}
        timed = medians(runs, rounds=args.rounds, warmups=args.warmups)
        replay_storage = {name: Counter({m: s / (args.rounds + args.warmups)
                                         for m, s in storage.seconds.items()})
                          for name, storage in storages.items()}
        for replay in replays.values():
            replay.run(replay.prepare(QUERY, run_id="base"))
        first = {name: storages[name].inner.read_arrow(replay.warehouse.recording("vitals"))
                 .slice(0, args.new) for name, replay in replays.items()}
        for storage in storages.values():
            storage.seconds.clear()
        continued = continuations(replays, first, args.continuations)
        continue_storage = {name: Counter(storage.seconds) for name, storage in storages.items()}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result = {
        "replay_s": {n: round(s, 2) for n, s in timed.items()},
        "replay_ratio": round(timed["delta-spark"] / timed["delta-rs"], 2),
        "continuations_s": {n: round(s, 2) for n, s in continued.items()},
        "continuation_ratio": round(continued["delta-spark"] / continued["delta-rs"], 2),
        "replay_storage_s_per_run": where(replay_storage),
        "continuation_storage_s": where(continue_storage),
    }
    print(json.dumps(result, indent=1))
    record("backends", command=command_line(),
           data_size={"events": args.events, "keys": args.keys, "batches": args.batches,
                      "continuations": args.continuations, "events_per_commit": args.new},
           medians={"replay_delta_rs_s": timed["delta-rs"],
                    "replay_delta_spark_s": timed["delta-spark"],
                    "continuations_delta_rs_s": continued["delta-rs"],
                    "continuations_delta_spark_s": continued["delta-spark"]},
           ratio=result["replay_ratio"],
           target="none (delta-spark / delta-rs, informative)", extra=result)
    print(f"tumbling replay of {args.events:,} events in {args.batches} batches: delta-rs "
          f"{timed['delta-rs']:.2f} s, delta-spark {timed['delta-spark']:.2f} s (ratio "
          f"{result['replay_ratio']}); {args.continuations} continuations: delta-rs "
          f"{continued['delta-rs']:.2f} s, delta-spark {continued['delta-spark']:.2f} s (ratio "
          f"{result['continuation_ratio']})")


if __name__ == "__main__":
    main()

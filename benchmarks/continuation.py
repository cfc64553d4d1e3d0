"""Benchmark: continuing a replay over new commits vs replaying the whole history again.

A vitals recording of ``--history`` events (1000 patients, 20 commits) is replayed once
(untimed). Then ``--commits`` commits of ``--events`` new events each (the recording's first
events, one day later per commit) are appended one at a time; after each, the run is continued
(``replay --continue``) and, in the same process, the query is replayed from scratch at that
version (a new run: preparing it and running it, as a continuation is timed whole). Prints the
total time of the continuations and of the fresh replays, their
ratio (target >= 10x), and the continuation time per new event; with ``--big`` the
continuations are repeated over a larger history (fresh replays not repeated) to show that
time per new event stays flat as the history grows. ``python -m benchmarks.continuation``.
"""

from __future__ import annotations

import argparse
import json
import time

import pyarrow as pa
import pyarrow.compute as pc

from engine.catalog import load_catalog
from jobs.runs.continuation import continue_query
from jobs.runs.replay import Replay

from .harness import ROOT, bench
from .results import command_line, record

QUERY = "vitals_hr_1m"
DAY_US = 86_400_000_000


def new_commit(replay: Replay, first: pa.Table, k: int) -> None:
    """Append ``first`` (events) ``k`` days later to the recording as one commit."""
    shifted = pc.add(first["ts"], pa.scalar((k + 1) * DAY_US, pa.duration("us")))
    table = first.set_column(first.schema.get_field_index("ts"), "ts", shifted)
    replay.storage.write(table, replay.warehouse.recording("vitals"), mode="append")


def run_history(b, catalog, history: int, commits: int, events: int, fresh: bool) -> dict:
    """Continuations (and fresh replays when ``fresh``) over ``commits`` appended commits."""
    warehouse = b.vitals(catalog, f"h{history}", history, 1000, 20)
    replay = Replay(b.spark, b.storage, warehouse, catalog)
    base = replay.prepare(QUERY, run_id="base")
    replay.run(base)
    first = b.storage.read_arrow(warehouse.recording("vitals")).slice(0, events)
    cont_s, fresh_s = [], []
    for k in range(commits):
        new_commit(replay, first, k)
        started = time.perf_counter()
        result = continue_query(replay, QUERY, run_id="base", log=lambda line: None)
        cont_s.append(time.perf_counter() - started)
        assert result.segment is not None and not result.fresh_reason
        if fresh:  # the whole of a fresh replay, as the continuation's time is its whole
            started = time.perf_counter()
            replay.run(replay.prepare(QUERY, run_id=f"fresh{k}"))
            fresh_s.append(time.perf_counter() - started)
    out = {"history": history, "commits": commits, "events_per_commit": events,
           "continuations_s": round(sum(cont_s), 2),
           "per_new_event_us": round(sum(cont_s) / (commits * events) * 1e6, 2),
           "continuation_s_each": [round(s, 2) for s in cont_s]}
    if fresh:
        out.update(fresh_replays_s=round(sum(fresh_s), 2),
                   fresh_s_each=[round(s, 2) for s in fresh_s],
                   speedup=round(sum(fresh_s) / sum(cont_s), 1))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--history", type=int, default=1_000_000)
    parser.add_argument("--big", type=int, default=4_000_000, help="0: skip")
    parser.add_argument("--commits", type=int, default=10)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    catalog = load_catalog(ROOT / "schemas")
    with bench(args.master) as b:
        runs = [run_history(b, catalog, args.history, args.commits, args.events, fresh=True)]
        if args.big:
            runs.append(run_history(b, catalog, args.big, args.commits, args.events,
                                    fresh=False))
    print(json.dumps(runs, indent=1))
    small = runs[0]
    record("continuation", command=command_line(),
           data_size={"history": args.history, "big": args.big, "commits": args.commits,
                      "events_per_commit": args.events},
           medians={"continuations_s": small["continuations_s"],
                    "fresh_replays_s": small["fresh_replays_s"],
                    **{f"per_new_event_us_{r['history']}": r["per_new_event_us"]
                       for r in runs}},
           ratio=small["speedup"], target="fresh replays / continuations >= 10",
           extra={"runs": runs})
    print(f"{args.commits} continuations of {args.events:,} events over {args.history:,} events "
          f"of history: {small['continuations_s']} s; {args.commits} fresh replays: "
          f"{small['fresh_replays_s']} s; speed-up {small['speedup']}x (target >= 10x)")
    for r in runs:
        print(f"history {r['history']:,}: {r['per_new_event_us']} us of continuation per new "
              "event")


if __name__ == "__main__":
    main()

"""Benchmark: ``ticks_v_shapes`` with its derived ``change`` column computed in the bucket workers
(direct exchange) vs by Spark SQL (the spark exchange: read, shuffle by symbol, ``lag`` window,
shuffle to the buckets, Arrow transfer: what every derived column cost before), same process.

N ticks (default 1M, 1,000 symbols, 20 commits, one batch per commit); medians of 3 rounds that
run each side once in turn, after 1 untimed round; both runs' outputs are checked equal.
Run with ``python -m benchmarks.v_shapes [--events N]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json

from engine.catalog import load_catalog
from jobs.recordings.store import generate_recording
from jobs.runs.replay import Replay
from jobs.warehouse import Warehouse

from .harness import ROOT, ReplayRuns, bench, medians
from .results import command_line, record

QUERY = "ticks_v_shapes"


def output(runs: ReplayRuns) -> list[tuple]:
    replay, info = runs.replay, runs.info
    table = replay.storage.read_arrow(replay.warehouse.run_table(info.run_id, "output"))
    frame = table.drop(["batch"]).to_pandas()
    return sorted(map(tuple, frame.astype(object).where(frame.notna(), None).itertuples(
        index=False)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    catalog = load_catalog(ROOT / "schemas")
    with bench(args.master) as b:
        warehouse = Warehouse(b.root / "ticks")
        generate_recording(b.storage, warehouse, catalog, "ticks", keys=args.keys,
                           events=args.events, seed=1, commits=20)
        replay = Replay(b.spark, b.storage, warehouse, catalog, exchange="direct")
        workers = ReplayRuns(replay, QUERY, plan="commit")
        spark_sql = ReplayRuns(dataclasses.replace(replay, exchange="spark"), QUERY,
                               plan="commit")
        timed = medians({"workers": workers, "spark_sql": spark_sql}, rounds=args.rounds,
                        warmups=1)
        assert workers.info.exchange == "direct" and spark_sql.info.exchange == "spark"
        same = output(workers) == output(spark_sql)
        outputs = sum(workers.manifest.column("rows_out").to_pylist())
    result = {"query": QUERY, "events": args.events, "keys": args.keys,
              "batches": workers.info.batches, "master": args.master, "outputs": outputs,
              "identical_outputs": same, "workers_s": round(timed["workers"], 2),
              "spark_sql_s": round(timed["spark_sql"], 2),
              "speed_up": round(timed["spark_sql"] / timed["workers"], 1)}
    print(json.dumps(result, indent=1))
    record("v_shapes", command=command_line(),
           data_size={"events": args.events, "keys": args.keys,
                      "batches": workers.info.batches},
           medians={"workers_s": timed["workers"], "spark_sql_s": timed["spark_sql"]},
           ratio=result["speed_up"], target="Spark SQL / workers >= 5", extra=result)
    print(f"{QUERY} over {args.events:,} ticks: derived column in the workers "
          f"{timed['workers']:.1f} s, by Spark SQL {timed['spark_sql']:.1f} s "
          f"({result['speed_up']}x; target >= 5x); outputs identical: {same}")


if __name__ == "__main__":
    main()

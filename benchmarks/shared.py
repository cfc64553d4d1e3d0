"""Benchmark: 32 queries on one recording replayed as one shared run vs 32 standalone runs.

The workload is like the stream-sharing report's experiment, on the vitals recording (default
1M events, 1000 patients, 10 commits, one batch per commit): seeded random select queries
(random column subsets, random AND/OR range predicates on heart_rate and spo2) and window
queries (tumbling and sliding windows of different sizes and slides, decomposable aggregates,
like dashboard panels each behind one of three common filters, so windows can share panes).
Both sides run in the same process and Spark session, in rounds that run each once in turn
after one untimed round (``harness.medians``; medians reported), each timing its runs'
preparation too; the standalone runs one after another, each reading the recording. Prints
wall times, rows read, rows entering the per-query operators, how many queries a shared
intermediate serves with MATCH only vs with widening, and how many windows share panes.
Run with ``python -m benchmarks.shared [--events N] [--queries Q] [--rounds R]``;
``--variant derived`` (recorded as ``shared_derived``, target 4x) makes a third of the queries
global windows (``key: none``) or windows over a derived column, half of those one shared
column (``hr_delta``, a ``lag``), the others a ``CASE`` column of their own.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import shutil
import time
from pathlib import Path

import numpy as np
from deltalake import DeltaTable

from engine.catalog import load_catalog
from engine.predicate import TRUE
from jobs.runs.replay import Replay
from jobs.shared.shared_run import SharedReplay, pane_shares

from .harness import ROOT, bench, creation_latency, medians
from .results import command_line, record

COLUMNS = ["patient_id", "ts", "heart_rate", "spo2"]
#: Creating a file slower than this (µs; about 20 on a rested ext4 disk, 14 on tmpfs) is
#: pointed out with the result.
SLOW_CREATION_US = 60
SIZES = ["1m", "2m", "5m", "10m"]


def _range(rng: random.Random) -> str:
    column, lo, hi = rng.choice([("heart_rate", 40, 180), ("spo2", 85, 100)])
    a, b = sorted(rng.sample(range(lo, hi), 2))
    return rng.choice([f"{column} BETWEEN {a} AND {b}", f"{column} >= {a}", f"{column} < {b}"])


def predicate(rng: random.Random) -> str:
    """A random AND/OR of one to three range conditions."""
    parts = [_range(rng) for _ in range(rng.randint(1, 3))]
    text = parts[0]
    for part in parts[1:]:
        text = f"({text}) {rng.choice(['AND', 'OR'])} {part}"
    return text


#: The filters of the window queries (dashboard panels over a few common pre-selections).
PANEL_FILTERS = [None, "spo2 < 95", "heart_rate >= 100"]


#: The derived column that half of the deriving queries of the ``derived`` variant share.
SHARED_DERIVED = ("hr_delta", "heart_rate - lag(heart_rate) over (partition by patient_id "
                  "order by __seq)")


def special(name: str, j: int, rng: random.Random) -> str:
    """The ``j``-th query of the ``derived`` variant's third: in turn a global window
    (``key: none``), a window over :data:`SHARED_DERIVED`, and one over a column of its own
    (a ``CASE`` on its own threshold)."""
    size = rng.choice(SIZES)
    window = f"{{type: tumbling, size: {size}}}"
    panel = rng.choice(PANEL_FILTERS)
    head = (f"name: {name}\nkind: window\ninput: vitals\nlateness: 10s\n"
            + (f"where: \"{panel}\"\n" if panel else ""))
    if j % 3 == 0:
        return (head.replace("lateness:", "key: none\nlateness:")
                + f"query:\n  window: {window}\n"
                "  aggregates: {n: count(), hr_max: max(heart_rate), spo2_min: min(spo2)}\n")
    if j % 3 == 1:
        column, sql = SHARED_DERIVED
    else:
        column = "hr_high"
        sql = f"case when heart_rate >= {rng.randint(90, 140)} then 1 else 0 end"
    return (head + f"derive:\n  {column}: {{sql: \"{sql}\", type: int}}\n"
            f"query:\n  window: {window}\n"
            f"  aggregates: {{n: count(), top: max({column}), total: sum({column})}}\n")


def workload(count: int, seed: int = 7, variant: str = "plain") -> dict[str, str]:
    """``count`` query files (name -> YAML): one third selects, each behind its own random
    predicate; two thirds windows, each behind one of :data:`PANEL_FILTERS`. The ``derived``
    variant makes half of the windows' share (a third of the queries) global windows or
    windows over a derived column (:func:`special`)."""
    rng = random.Random(seed)
    queries = {}
    for i in range(count):
        name = f"q{i:02d}"
        if variant == "derived" and i % 3 == 1:
            queries[name] = special(name, i // 3, rng)
            continue
        if i % 3 == 2:
            where = predicate(rng)
            columns = sorted(rng.sample(COLUMNS, rng.randint(1, len(COLUMNS))))
            queries[name] = (f"name: {name}\nkind: select\ninput: vitals\nwhere: \"{where}\"\n"
                             f"query:\n  columns: [{', '.join(columns)}]\n")
            continue
        size = rng.choice(SIZES)
        slide = rng.choice([s for s in SIZES if SIZES.index(s) <= SIZES.index(size)])
        window = (f"{{type: tumbling, size: {size}}}" if slide == size else
                  f"{{type: sliding, size: {size}, slide: {slide}}}")
        aggregates = ["n: count()", *rng.sample(
            ["hr_avg: avg(heart_rate)", "hr_max: max(heart_rate)", "spo2_min: min(spo2)",
             "hr_sum: sum(heart_rate)", "spo2_n: count(spo2)"], 2)]
        panel = rng.choice(PANEL_FILTERS)
        queries[name] = (f"name: {name}\nkind: window\ninput: vitals\nlateness: 10s\n"
                         + (f"where: \"{panel}\"\n" if panel else "")
                         + f"query:\n  window: {window}\n"
                         f"  aggregates: {{{', '.join(aggregates)}}}\n")
    return queries


def catalog_dir(root: Path, queries: dict[str, str]) -> Path:
    schemas = root / "schemas"
    (schemas / "queries").mkdir(parents=True)
    shutil.copytree(ROOT / "schemas" / "recordings", schemas / "recordings")
    for name, text in queries.items():
        (schemas / "queries" / f"{name}.yaml").write_text(text)
    return schemas


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=32)
    parser.add_argument("--variant", choices=["plain", "derived"], default="plain",
                        help="derived: a third of the queries are global windows or derive a "
                             "column (half of those the same column)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rounds", type=int, default=3,
                        help="timed rounds of both sides in turn, after one untimed round; "
                             "the medians are reported")
    args = parser.parse_args()
    with bench(args.master) as b:
        catalog = load_catalog(catalog_dir(b.root, workload(args.queries,
                                                            variant=args.variant)))
        warehouse = b.vitals(catalog, "big", args.events, args.keys, 10)
        replay = Replay(b.spark, b.storage, warehouse, catalog)
        names = sorted(catalog.queries)
        shared = SharedReplay(replay)
        planned = [replay.prepare(n, run_id=f"{n}-plan") for n in names]
        plan, alone = shared.plan(planned)
        assert plan is not None and not alone, "every query of the workload should share"
        contexts = [replay.context(name) for name in names]
        buckets = planned[0].buckets  # each standalone run's Spark tasks
        shares = pane_shares(plan, {c.query.name: c.family.operator(c.query, c.recordings)
                                    for c in contexts},
                             {c.query.name: c.family for c in contexts})
        rounds = itertools.count()
        tasks: list[int] = []  # the Spark tasks of each shared run (each reads the range once)

        def shared_run() -> float:  # each side prepares (makes) fresh runs, timed
            started, r, before = time.perf_counter(), next(rounds), shared.tasks
            shared.run([replay.prepare(n, run_id=f"{n}-shared-{r}") for n in names])
            elapsed = time.perf_counter() - started
            tasks.append(shared.tasks - before)
            return elapsed

        def standalone_runs() -> float:
            started, r = time.perf_counter(), next(rounds)
            for name in names:
                replay.run(replay.prepare(name, run_id=f"{name}-alone-{r}"))
            return time.perf_counter() - started

        before = creation_latency(b.root)
        timed = medians({"shared": shared_run, "standalone": standalone_runs}, args.rounds,
                        warmups=1)
        shared_s, standalone_s = timed["shared"], timed["standalone"]
        latency = (before, creation_latency(b.root))
        frame = DeltaTable(warehouse.recording("vitals")).to_pandas(
            columns=["heart_rate", "spo2"])
    n = len(frame)
    entering = sum(int(np.count_nonzero(c.where.evaluate(frame))) * len(c.members)
                   for c in plan.clusters)
    passing = sum(int(np.count_nonzero(v.where.evaluate(frame))) if v.where != TRUE else n
                  for v in plan.views)
    counters = plan.to_json()["counters"]
    result = {
        "events": args.events, "queries": len(names), "master": args.master,
        "variant": args.variant,
        "clusters": len(plan.clusters),
        "pane_groups": sum(len(c.pane_groups) for c in plan.clusters),
        # on Spark: the windows whose late split and pane partials are computed once per group
        "queries_sharing_panes": len(shares),
        "pane_groups_on_spark": len({id(share) for share in shares.values()}),
        "rounds": args.rounds, "shared_s": round(shared_s, 2),
        "standalone_s": round(standalone_s, 2),
        "speedup": round(standalone_s / shared_s, 2),
        # creating a file in the warehouse's directory, before and after the rounds
        "file_creation_us": [round(t) for t in latency],
        "rows_read": {"shared": n, "standalone": n * len(names)},  # the range, once per run
        # every task reads the whole range: the shared run's parts, each standalone run's
        # bucket tasks (keeping their own keys)
        "rows_read_by_tasks": {"shared": n * tasks[-1],
                               "standalone": n * len(names) * buckets},
        "rows_entering_operators": {"shared": entering, "standalone": n * len(names),
                                    "passing_own_predicates": passing},
        "served_match_only": counters["shared_match_only"],
        "served_with_widening": counters["shared_with_widening"],
        "derived_columns_read": counters["derived_columns_read"],
        "derived_columns_computed": counters["derived_columns_computed"],
    }
    print(json.dumps(result, indent=1))
    target = 5 if args.variant == "plain" else 4
    measured = {"command": command_line(),
                "data_size": {"events": args.events, "keys": args.keys, "queries": len(names)},
                "medians": {"shared_s": shared_s, "standalone_s": standalone_s},
                "ratio": result["speedup"],
                "target": f"standalone runs / shared run >= {target}", "extra": result}
    if args.variant == "plain":
        record("shared", **measured)
    else:
        record("shared_derived", **measured)
    print(f"{len(names)} queries over {n:,} events, medians of {args.rounds} rounds: shared run "
          f"{shared_s:.2f} s, standalone runs {standalone_s:.2f} s, {result['speedup']}x "
          f"(target >= {target}x); rows read {n:,} vs {n * len(names):,} (by the Spark tasks, each "
          f"reading the range: {n * tasks[-1]:,} vs {n * len(names) * buckets:,}); rows "
          f"entering operators {entering:,} vs {n * len(names):,}; "
          f"served by a shared stream: {counters['shared_match_only']} with MATCH only, "
          f"{counters['shared_with_widening']} with widening; {len(shares)} windows in "
          f"{result['pane_groups_on_spark']} pane groups aggregate their panes once per group; "
          f"creating a file in the warehouse's directory took {latency[0]:.0f} µs before the "
          f"rounds, {latency[1]:.0f} µs after")
    if max(latency) > SLOW_CREATION_US:
        print(f"note: creating a file took over {SLOW_CREATION_US} µs: the file system is slow to "
              "create files now (on ext4 without a journal: inodes freed nearby in the last "
              "minutes), which both sides pay per file, so this ratio is lower than on a rested "
              "disk; run again later or with TMPDIR on tmpfs (docs/contributing/benchmarking.md)")


if __name__ == "__main__":
    main()

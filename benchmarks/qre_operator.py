"""Benchmark: the keyed QRE operator alone (no Spark) on the vitals episode query.

Generates N vitals events over K patients in arrival order (``jobs.recordings.generators``: a
reading every 5 s per patient, 5% of them delayed by up to 20 s, i.e. out of order within the
query's 30 s lateness), adds ``__t`` and ``__seq`` as the replay does, cuts them into B
consecutive batches and steps the operator of ``vitals_episode_max_avg`` (mode ``changes``,
built as ``engine.registry`` builds it) through them, single process:

- ``operator``: the steps and the end-of-input flush (best of ``--repeat``): the operator's cost
  in a replay worker;
- ``run_batches``: the in-process runner ``engine.operator.run_batches``, which also digests the
  state after every batch;
- ``phases_s``: one profiled pass (cProfile) over the steps, split into their phases.

Run with ``python -m benchmarks.qre_operator [--events N --keys K --batches B]``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from engine.catalog import load_catalog
from engine.operator import SEQ, TIME, run_batches
from engine.qre.kernel import Kernel
from engine.qre.keyed import QreOperator
from engine.qre.query_spec import parse_qre_query
from jobs.recordings.generators import generate_vitals

from .results import command_line, record

ROOT = Path(__file__).resolve().parents[1]
QUERY = "vitals_episode_max_avg"
START_US = 1_700_000_000_000_000


def vitals(events: int, keys: int) -> pd.DataFrame:
    """The recording in arrival order, with ``__t`` and ``__seq`` as the replay adds them."""
    table = pa.concat_tables(generate_vitals(keys, events, seed=1, commits=1,
                                             start_us=START_US).commits)
    table = (table.append_column(TIME, pc.cast(table.column("ts"), pa.int64()))
             .append_column(SEQ, pa.array(np.arange(len(table), dtype=np.int64))))
    return table.to_pandas()


def out_of_order(events: pd.DataFrame, key: str) -> int:
    """Events that arrive after a later event of their key (the operator must reorder them)."""
    before = events.groupby(key)[TIME].cummax().groupby(events[key]).shift(1)
    return int((events[TIME] < before).sum())


def operator() -> QreOperator:
    """The query's operator, built as ``engine.registry`` builds it."""
    catalog = load_catalog(ROOT / "schemas")
    query = catalog.query(QUERY)
    return QreOperator(parse_qre_query(query, catalog.recordings[query.input]), name=query.name)


def run(op: QreOperator, batches: list[pd.DataFrame]) -> tuple[float, dict[str, int]]:
    """Seconds to step ``op`` through ``batches`` and finish, and what came out."""
    state, counts = op.init(), {"outputs": 0, "late": 0, "rejected": 0}
    started = time.perf_counter()
    for batch in batches:
        result = op.step(state, batch)
        state = result.state
        counts["outputs"] += len(result.output)
        counts["late"] += len(result.late)
        counts["rejected"] += len(result.rejected)
    counts["outputs"] += len(op.finish(state))
    elapsed = time.perf_counter() - started
    counts["state_rows"] = len(state)
    counts["state_pending_bytes"] = int(state["pending"].map(len).sum())
    return elapsed, counts


#: Phases of a step: name -> (functions whose time counts, functions whose time is taken out).
PHASES: dict[str, tuple[list[Callable[..., Any]], list[Callable[..., Any]]]] = {
    "read_reject_late": ([QreOperator.step], [QreOperator._advance]),
    "buffer": ([QreOperator._advance], [QreOperator._release]),
    "kernel_load_states": ([Kernel.load], []),
    "kernel_run": ([Kernel.run], []),
    "kernel_dump_states": ([Kernel.dumps], []),
    "outputs": ([QreOperator._release], [Kernel.load, Kernel.run, Kernel.dumps]),
}


def phases(op: QreOperator, batches: list[pd.DataFrame]) -> dict[str, float]:
    """Seconds per phase of one profiled pass over the steps (``PHASES``)."""
    profile = cProfile.Profile()
    state = op.init()
    profile.enable()
    for batch in batches:
        state = op.step(state, batch).state
    profile.disable()
    table = pstats.Stats(profile).stats
    cumulative = {(f, line, name): row[3] for (f, line, name), row in table.items()}

    def seconds(fn: Callable[..., Any]) -> float:
        code = fn.__code__
        return cumulative.get((code.co_filename, code.co_firstlineno, code.co_name), 0.0)

    return {name: round(sum(map(seconds, add)) - sum(map(seconds, sub)), 4)
            for name, (add, sub) in PHASES.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    events = vitals(args.events, args.keys)
    batches = [events.iloc[rows[0]:rows[-1] + 1]
               for rows in np.array_split(np.arange(len(events)), args.batches) if len(rows)]
    op = operator()
    run(op, [events.iloc[:1000]])  # warm-up: loads the kernel (numba's disk cache)
    best, counts = min((run(op, batches) for _ in range(args.repeat)), key=lambda r: r[0])
    started = time.perf_counter()
    run_batches(op, batches)
    runner_s = time.perf_counter() - started
    report = {
        "query": QUERY, "mode": op.spec.output, "events": len(events), "keys": args.keys,
        "batches": len(batches), "out_of_order": out_of_order(events, op.key),
        "operator_version": op.version, **counts,
        "operator_s": round(best, 3),
        "operator_events_per_s": round(len(events) / best),
        "run_batches_s": round(runner_s, 3),
        "run_batches_events_per_s": round(len(events) / runner_s),
        "phases_s": phases(op, batches),
    }
    print(json.dumps(report, indent=2))
    record("qre_operator", command=command_line(),
           data_size={"events": len(events), "keys": args.keys, "batches": len(batches)},
           medians={"operator_s": best, "run_batches_s": runner_s}, extra=report)
    print(f"QreOperator: {len(events):,} events, {args.keys:,} keys, {len(batches)} batches: "
          f"{best:.2f} s, {report['operator_events_per_s'] / 1e6:.2f}M events/s "
          f"(run_batches with state digests: {report['run_batches_events_per_s'] / 1e6:.2f}M/s)")


if __name__ == "__main__":
    main()

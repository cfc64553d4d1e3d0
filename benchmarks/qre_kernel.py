"""Benchmark: the QRE numba kernel against the interpreters on the vitals episode query.

Generates the synthetic vitals recording (``jobs.recordings.generators``, seeded; heart rates with
tachycardia episodes), puts every patient's readings in event-time order and evaluates the QRE of
``vitals_episode_max_avg`` with output mode ``changes``, single process, no Spark:

- the kernel over all events in one call (events/s, best of 3; the one-off compile time, which
  includes numba's on-disk cache when it is warm, is reported apart);
- the derivative interpreter (``evaluate``'s engine) and the compiled Python automaton on the
  first patients covering ``--sample`` events, with the kernel's outputs checked against them;
- state bytes per key after the run: the kernel's canonical encoding, the interpreter state as
  the operator stored it before (a pickle of the compiled state), and the derivative state;
- the keyed operator (``QreOperator``: lateness buffer, binary pending events, output rows) on the
  sample patients' events in arrival order, in 10 batches, with and without the kernel.

The kernel is compiled cold (an empty numba cache directory), so the compile time is the one-off
cost of a new query; later processes load it from the cache.

Run with ``python -m benchmarks.qre_kernel [--events N --keys K --sample S]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import pickle
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from engine.catalog import load_catalog
from engine.operator import SEQ, TIME
from engine.qre import CompiledEvaluator, DerivativeEvaluator, Evaluator, parse
from engine.qre.kernel import MODES, Kernel, compile_kernel
from engine.qre.kernel_cache import cache_dir, configure_cache
from engine.qre.keyed import QreOperator
from engine.registry import operator_for
from jobs.recordings.generators import generate_vitals

from .results import command_line, record

ROOT = Path(__file__).resolve().parents[1]
QUERY = "vitals_episode_max_avg"
FIELD = "heart_rate"
TARGET_EVENTS_PER_S = 5_000_000
TARGET_RATIO = 20


def vitals(events: int, keys: int) -> pa.Table:
    """The recording in arrival order, with ``__t`` and ``__seq`` as the replay adds them."""
    table = pa.concat_tables(generate_vitals(keys, events, seed=1, commits=1,
                                             start_us=1_700_000_000_000_000).commits)
    return (table.append_column(TIME, pc.cast(table.column("ts"), pa.int64()))
            .append_column(SEQ, pa.array(np.arange(len(table), dtype=np.int64))))


def runs(table: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Heart rates sorted by (patient, event time), each patient's boundaries and name."""
    table = table.take(pc.sort_indices(table, [("patient_id", "ascending"), (TIME, "ascending"),
                                               (SEQ, "ascending")]))
    patients = table.column("patient_id").to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.r_[True, patients[1:] != patients[:-1]])
    return (table.column(FIELD).to_numpy().astype(np.int64), np.r_[starts, len(patients)],
            patients[starts])


def time_kernel(kernel: Kernel, rates: np.ndarray, bounds: np.ndarray, mode: str
                ) -> tuple[float, Any]:
    """Best of three runs over every key: (seconds, last result)."""
    best, result = float("inf"), None
    for _ in range(3):
        started = time.perf_counter()
        result = kernel.run({FIELD: rates}, bounds, kernel.initial(len(bounds) - 1), mode)
        best = min(best, time.perf_counter() - started)
    return best, result


def time_interpreter(engine: Evaluator, text: str, rates: np.ndarray, bounds: np.ndarray
                     ) -> tuple[float, list[Any], list[Any]]:
    """Seconds to step and read the output after every item of every key, the outputs, and the
    final states."""
    query, outputs, states = parse(text), [], []
    items = [{FIELD: v} for v in rates.tolist()]
    started = time.perf_counter()
    for lo, hi in itertools.pairwise(bounds):
        state = engine.start(query)
        for item in items[lo:hi]:
            state = state.step(item)
            outputs.append(state.output())
        states.append(state)
    return time.perf_counter() - started, outputs, states


def time_operator(op: QreOperator, events: pd.DataFrame) -> tuple[float, pd.DataFrame]:
    """Seconds to step ``op`` through ``events`` in 10 batches and finish, and its output."""
    state, outputs = op.init(), []
    started = time.perf_counter()
    for batch in np.array_split(np.arange(len(events)), 10):
        result = op.step(state, events.iloc[batch])
        state = result.state
        outputs.append(result.output)
    outputs.append(op.finish(state))
    elapsed = time.perf_counter() - started
    return elapsed, pd.concat([o for o in outputs if not o.empty] or outputs[-1:],
                              ignore_index=True)


def compile_cold(text: str) -> tuple[Kernel | str, float]:
    """The kernel compiled with an empty numba cache, and the seconds it took."""
    with tempfile.TemporaryDirectory(prefix="reprise-kernel-bench-") as cache:
        previous = cache_dir()
        configure_cache(cache)
        started = time.perf_counter()
        kernel = compile_kernel(text, {FIELD: "int"})
        elapsed = time.perf_counter() - started
        configure_cache(previous)
    return kernel, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=100_000,
                        help="events (whole patients) for the interpreters")
    args = parser.parse_args()
    catalog = load_catalog(ROOT / "schemas")
    fast = operator_for(catalog.query(QUERY), catalog.recordings)
    assert isinstance(fast, QreOperator)
    text = fast.spec.text

    table = vitals(args.events, args.keys)
    rates, bounds, patients = runs(table)
    kernel, compile_s = compile_cold(text)
    if not isinstance(kernel, Kernel):
        raise SystemExit(f"no kernel: {kernel}")
    timed = {mode: time_kernel(kernel, rates, bounds, mode) for mode in MODES}
    kernel_s, result = timed[fast.spec.output]
    assert (result.failed == -1).all()

    cut = max(int(np.searchsorted(bounds, args.sample)), 1)
    sample_bounds = bounds[:cut + 1]
    n_sample = int(sample_bounds[-1])
    derivative_s, expected, derivative_states = time_interpreter(
        DerivativeEvaluator(), text, rates, sample_bounds)
    compiled_s, compiled_outputs, compiled_states = time_interpreter(
        CompiledEvaluator(), text, rates, sample_bounds)
    assert [kernel.outcome(result, i) for i in range(n_sample)] == expected == compiled_outputs

    mine = pc.is_in(table.column("patient_id"), pa.array(patients[:cut]))
    events = table.filter(mine).select(["patient_id", TIME, SEQ, FIELD]).to_pandas()
    op_fast_s, out_fast = time_operator(fast, events)
    op_slow_s, out_slow = time_operator(QreOperator(fast.spec, fast.name, use_kernel=False), events)
    pd.testing.assert_frame_equal(out_fast, out_slow)

    keys = len(bounds) - 1
    kernel_eps = len(rates) / kernel_s
    report = {
        "query": QUERY, "events": len(rates), "keys": keys, "mode": fast.spec.output,
        "kernel_compile_s": round(compile_s, 3),
        "kernel_s": round(kernel_s, 4),
        "kernel_events_per_s": round(kernel_eps),
        "kernel_events_per_s_by_mode": {m: round(len(rates) / t) for m, (t, _) in timed.items()},
        "sample_events": n_sample, "sample_keys": len(sample_bounds) - 1,
        "derivative_events_per_s": round(n_sample / derivative_s),
        "compiled_events_per_s": round(n_sample / compiled_s),
        "kernel_vs_derivative": round(kernel_eps / (n_sample / derivative_s), 1),
        "kernel_vs_compiled": round(kernel_eps / (n_sample / compiled_s), 1),
        "outputs_checked": n_sample,
        "operator_events_per_s": {"kernel": round(len(events) / op_fast_s),
                                  "interpreter": round(len(events) / op_slow_s)},
        "operator_speedup": round(op_slow_s / op_fast_s, 2),
        "state_bytes_per_key": {
            "kernel": round(float(np.mean([len(kernel.dump(result.states, k))
                                           for k in range(keys)])), 1),
            "compiled_pickle": round(float(np.mean([len(pickle.dumps(s))
                                                    for s in compiled_states])), 1),
            "derivative_pickle": round(float(np.mean([len(pickle.dumps(s))
                                                      for s in derivative_states])), 1),
        },
    }
    report["targets_met"] = (kernel_eps >= TARGET_EVENTS_PER_S
                             and report["kernel_vs_derivative"] >= TARGET_RATIO)
    print(json.dumps(report, indent=2))
    record("qre_kernel", command=command_line(),
           data_size={"events": len(rates), "keys": keys, "sample_events": n_sample},
           medians={"kernel_s": kernel_s, "kernel_compile_s": compile_s,
                    "derivative_sample_s": derivative_s, "compiled_sample_s": compiled_s},
           ratio=report["kernel_vs_derivative"],
           target=f"kernel >= {TARGET_EVENTS_PER_S:,} events/s and >= {TARGET_RATIO}x the "
                  "derivative interpreter", extra=report)
    sizes = report["state_bytes_per_key"]
    print(f"qre kernel: {kernel_eps / 1e6:.1f}M events/s over {len(rates):,} events / {keys:,} "
          f"keys (compile {compile_s:.2f}s), {report['kernel_vs_derivative']}x the derivative "
          f"interpreter, {report['kernel_vs_compiled']}x the compiled automaton "
          f"({n_sample:,}-event sample); operator {report['operator_speedup']}x; state "
          f"{sizes['kernel']} B/key vs {sizes['compiled_pickle']} B pickled; targets met: "
          f"{report['targets_met']}")


if __name__ == "__main__":
    main()

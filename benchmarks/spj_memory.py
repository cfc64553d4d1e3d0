"""Benchmark: state size and batch time of the SPJ synopsis executor vs full-history evaluation.

Pure Python (no Spark). One bounded query (README example Q3, an equality join on attributes the
WHERE clause bounds to 11..19) runs over deterministic random streams (seeded numpy) of up to
10^6 events in batches of 10^4, once on synopses and once in full-history mode (every tuple
kept, hash-indexed on the join attribute). Both runs are snapshotted at 10^4, 10^5 and 10^6
events: stored entries, encoded state bytes and the median batch time over the first and the
last tenth of the batches so far. Prints a JSON summary and a table. Run with
``python -m benchmarks.spj_memory [--events N] [--batch B] [--seed S]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from engine.spj import SpjExecutor

from .results import command_line, record

QUERY = "SELECT S.A FROM S, T WHERE S.A = T.D AND S.A > 10 AND T.D < 20"
SCHEMAS = {"S": ["A", "B", "C"], "T": ["D", "E"]}


def generate(n: int, seed: int) -> list[tuple[str, dict[str, int]]]:
    """Events on S and T; half the join values fall in 5..25 (every bucket), half anywhere."""
    rng = np.random.default_rng(seed)
    on_s = rng.random(n) < 0.5
    near = rng.integers(5, 26, n)
    far = rng.integers(-1_000_000, 1_000_001, n)
    key = np.where(rng.random(n) < 0.5, near, far).tolist()
    other = rng.integers(-1_000_000, 1_000_001, (n, 2)).tolist()
    return [("S", {"A": k, "B": o[0], "C": o[1]}) if s else ("T", {"D": k, "E": o[0]})
            for s, k, o in zip(on_s.tolist(), key, other, strict=True)]


def _decile_medians(times: list[float]) -> tuple[float, float]:
    tenth = max(1, len(times) // 10)
    return statistics.median(times[:tenth]), statistics.median(times[-tenth:])


def run(mode: str, events: list, batch: int, marks: list[int]) -> dict[int, dict]:
    """Step ``events`` in batches; snapshot the state and batch times at each mark."""
    ex = SpjExecutor(QUERY, SCHEMAS, mode=mode)
    state, times, out, emitted = ex.init(), [], {}, 0
    for start in range(0, len(events), batch):
        chunk = events[start:start + batch]
        began = time.perf_counter()
        state, rows = ex.step(state, chunk)
        times.append(time.perf_counter() - began)
        emitted += sum(r["count"] for r in rows)
        done = start + len(chunk)
        if done in marks:
            first, last = _decile_medians(times)
            out[done] = {"entries": ex.size(state), "bytes": len(ex.encode(state)),
                         "batch_ms_first_decile": round(first * 1e3, 3),
                         "batch_ms_last_decile": round(last * 1e3, 3),
                         "result_tuples": emitted}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    marks = [m for m in (10_000, 100_000, 1_000_000) if m < args.events] + [args.events]
    events = generate(args.events, args.seed)
    results = {mode: run(mode, events, args.batch, marks) for mode in ("synopsis", "full-history")}
    syn, full = results["synopsis"], results["full-history"]
    assert all(syn[m]["result_tuples"] == full[m]["result_tuples"] for m in marks), \
        "the two modes disagree"
    top = marks[-1]
    ratios = {k: round(full[top][k] / syn[top][k], 2)
              for k in ("entries", "bytes", "batch_ms_first_decile", "batch_ms_last_decile")}
    summary = {"query": QUERY, "batch": args.batch, "seed": args.seed,
               "synopsis_bound_units": SpjExecutor(QUERY, SCHEMAS).bound,
               "results": {mode: {str(m): r for m, r in res.items()}
                           for mode, res in results.items()},
               "full_history_over_synopsis_at": {str(top): ratios}}
    print(json.dumps(summary, indent=1))
    record("spj_memory", command=command_line(),
           data_size={"events": args.events, "batch": args.batch, "seed": args.seed},
           medians={f"{mode}_{k}": res[top][k] for mode, res in results.items()
                    for k in ("batch_ms_first_decile", "batch_ms_last_decile")},
           ratio=ratios["bytes"],
           target="synopsis state bounded: entries and bytes do not grow with the events",
           extra=summary)
    print(f"\n{'events':>10} {'mode':>13} {'entries':>9} {'bytes':>11} "
          f"{'ms/batch first':>15} {'ms/batch last':>14} {'result tuples':>15}")
    for m in marks:
        for mode, res in results.items():
            r = res[m]
            print(f"{m:>10} {mode:>13} {r['entries']:>9} {r['bytes']:>11} "
                  f"{r['batch_ms_first_decile']:>15} {r['batch_ms_last_decile']:>14} "
                  f"{r['result_tuples']:>15}")
    print(f"\nfull history / synopsis at {top} events: " +
          ", ".join(f"{k} x{v}" for k, v in ratios.items()))


if __name__ == "__main__":
    main()

"""Benchmark (c): exact median over sliding windows, window operator vs reference recomputation.

The operator slices each patient's stream, keeps every slice's heart rates as a sorted list and
assembles each window's median from its ``size / slide`` slices; the reference recomputes every
window from its raw events (``engine.windows.window_reference``). Same synthetic vitals data
(default 200k events over 200 patients, one reading every 5 s, some arriving up to 20 s late;
lateness 10 s), same process, no Spark: the operator runs through
``engine.operator.run_batches`` in ~20 micro-batches. Both outputs (and late events) are compared
(tolerance 1e-9) before the timings are printed.
Run with ``python -m benchmarks.median [--events N] [--ratio R]``.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
import pandas as pd
import pyarrow as pa

from engine.operator import SEQ, TIME, run_batches
from engine.windows import Aggregate, SlidingWindow, WindowSpec, window_reference
from jobs.recordings.generators import generate

from .results import command_line, record

SLIDE_S = 5
LATENESS_S = 10


def vitals_batches(events: int, keys: int, batches: int) -> list[pd.DataFrame]:
    """The synthetic vitals recording in arrival order, one batch per generated commit."""
    out, offset = [], 0
    for table in generate("vitals", keys=keys, events=events, seed=1, commits=batches).commits:
        frame = table.to_pandas()
        frame[TIME] = table.column("ts").cast(pa.int64()).to_numpy()
        frame[SEQ] = np.arange(offset, offset + len(frame), dtype="int64")
        offset += len(frame)
        out.append(frame)
    return out


def same_medians(output: pd.DataFrame, reference: list[dict]) -> bool:
    got = {(r["patient_id"], r["window_start"]): r["hr_median"]
           for r in output.to_dict("records")}
    want = {(r["patient_id"], r["window_start"]): r["hr_median"] for r in reference}
    return got.keys() == want.keys() and all(
        math.isclose(got[k], want[k], rel_tol=1e-9, abs_tol=1e-9) for k in want)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--ratio", type=int, default=20, help="window size / slide")
    parser.add_argument("--batches", type=int, default=20)
    args = parser.parse_args()
    batches = vitals_batches(args.events, args.keys, args.batches)
    spec = WindowSpec(key="patient_id", size_us=args.ratio * SLIDE_S * 1_000_000,
                      slide_us=SLIDE_S * 1_000_000, lateness_us=LATENESS_S * 1_000_000,
                      aggregates=(Aggregate("hr_median", "median", "heart_rate", p=0.5),),
                      value_types={"heart_rate": "int"}, key_type="string", kind="sliding")
    started = time.perf_counter()
    output, late, _, _ = run_batches(SlidingWindow(spec), batches)
    operator_s = time.perf_counter() - started
    events = pd.concat(batches, ignore_index=True)
    started = time.perf_counter()
    reference, reference_late = window_reference(events, spec)
    reference_s = time.perf_counter() - started
    if not same_medians(output, reference) or sorted(late[SEQ]) != reference_late:
        raise SystemExit("operator and reference disagree")
    result = {"events": args.events, "keys": args.keys, "size_s": args.ratio * SLIDE_S,
              "slide_s": SLIDE_S, "batches": args.batches, "windows": len(output),
              "late": len(late), "operator_s": round(operator_s, 2),
              "operator_events_per_s": round(args.events / operator_s),
              "reference_s": round(reference_s, 2), "speedup": round(reference_s / operator_s, 1)}
    print(json.dumps(result, indent=1))
    record("median", command=command_line(),
           data_size={"events": args.events, "keys": args.keys, "size_s": result["size_s"],
                      "slide_s": SLIDE_S, "batches": args.batches},
           medians={"operator_s": operator_s, "reference_s": reference_s},
           ratio=result["speedup"], extra=result)
    print(f"exact median, sliding {result['size_s']}s/{SLIDE_S}s over {args.events:,} events: "
          f"operator {operator_s:.1f} s, reference recomputation {reference_s:.1f} s: "
          f"{result['speedup']}x")


if __name__ == "__main__":
    main()

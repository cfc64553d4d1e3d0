"""Compare the rows of ``pyflink_queries.py ... --check OUT.csv`` with a Reprise run's output, one
by one (run in the project's venv; reads the run's Delta table with delta-rs)::

    python -m benchmarks.peers.compare v_shapes /tmp/peer/flink_v.csv WAREHOUSE/runs/RUN_ID
    python -m benchmarks.peers.compare hop /tmp/peer/flink_hop.csv WAREHOUSE/runs/RUN_ID

``v_shapes`` (``ticks_v_shapes``, ``output: changes``: one row per V, at its first rise, with
the deepest fall so far and the number of Vs): Flink's k-th match of a symbol (by the time of its
rise) against Reprise's row whose count is k: same rise time (to the millisecond, Flink's event
time precision) and the same deepest fall so far (the running maximum of Flink's depths, within
1e-6). ``hop`` (the sliding query): the windows of a patient by start, with the same end,
readings, minimum and maximum and an average within 1e-9. Prints the differences (at most 10 of
each kind) and returns with status 1 if there is any.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd
from deltalake import DeltaTable


def _ms(values: pd.Series) -> pd.Series:
    """Times (UTC strings or timestamps) as epoch milliseconds, truncated."""
    times = pd.to_datetime(values, utc=True)
    return times.astype("datetime64[us, UTC]").astype("int64") // 1000


def v_shapes(flink: pd.DataFrame, reprise: pd.DataFrame) -> pd.DataFrame:
    """One row per V of either side, with the columns of both (NaN where a side lacks it)."""
    flink = flink.set_axis(["symbol", "v_start", "v_up", "depth"], axis=1)
    flink = flink.assign(rise_ms=_ms(flink.v_up)).sort_values(["symbol", "rise_ms"])
    flink["k"] = flink.groupby("symbol").cumcount() + 1
    flink["max_depth"] = flink.groupby("symbol").depth.cummax()
    values = reprise.value_json.map(json.loads)
    reprise = pd.DataFrame({"symbol": reprise.symbol, "rise_ms": _ms(reprise.event_time),
                            "max_depth": values.map(lambda v: v[0]),
                            "k": values.map(lambda v: v[1])})
    both = flink.merge(reprise, on=["symbol", "k"], how="outer", suffixes=("_f", "_r"),
                       indicator=True)
    bad = ((both._merge != "both") | (both.rise_ms_f != both.rise_ms_r)
           | ((both.max_depth_f - both.max_depth_r).abs() > 1e-6))
    return both[bad]


def hop(flink: pd.DataFrame, reprise: pd.DataFrame) -> pd.DataFrame:
    flink = flink.set_axis(["patient_id", "window_start", "window_end", "readings", "hr_avg",
                            "hr_min", "hr_max"], axis=1)
    keys = ["patient_id", "start_ms"]
    sides = [side.assign(start_ms=_ms(side.window_start), end_ms=_ms(side.window_end))[
        [*keys, "end_ms", "readings", "hr_avg", "hr_min", "hr_max"]] for side in (flink, reprise)]
    both = sides[0].merge(sides[1], on=keys, how="outer", suffixes=("_f", "_r"), indicator=True)
    bad = (both._merge != "both") | ((both.hr_avg_f - both.hr_avg_r).abs() > 1e-9)
    for column in ("end_ms", "readings", "hr_min", "hr_max"):
        bad |= both[f"{column}_f"] != both[f"{column}_r"]
    return both[bad]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("query", choices=["v_shapes", "hop"])
    parser.add_argument("flink_csv", type=Path)
    parser.add_argument("run", type=Path, help="the Reprise run's directory")
    args = parser.parse_args()
    flink = pd.read_csv(args.flink_csv, header=None)
    reprise = DeltaTable(str(args.run / "output")).to_pandas()
    diff = (v_shapes if args.query == "v_shapes" else hop)(flink, reprise)
    print(f"{args.query}: Flink {len(flink):,} rows, Reprise {len(reprise):,} rows, "
          f"{len(diff):,} differing")
    if len(diff):
        for kind, rows in diff.groupby("_merge", observed=True):
            print(f"{kind} ({len(rows):,}):")
            print(rows.head(10).to_string(index=False))
        sys.exit(1)


if __name__ == "__main__":
    main()

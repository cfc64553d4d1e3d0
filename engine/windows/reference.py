"""Naive reference for tumbling, sliding, session and count windows: one pass per key over plain
Python lists, every aggregate recomputed from the raw values of the window's events.

Deliberately the simplest code path (no pandas groupby, no partial merging, no slices): the
replay's output is checked against it. ``approx_count_distinct`` builds the same HyperLogLog
sketch as the engine, but densely from the raw values; udafs fold ``add`` over the values in
(event time, arrival) order.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_right
from collections import defaultdict

import numpy as np
import pandas as pd

from ..operator import SEQ, TIME
from .base import WindowOverflowError
from .hll import registers_estimate
from .spec import Aggregate, WindowSpec

#: The int64 range: an int sum outside it is an error (:class:`WindowOverflowError`).
INT64 = (-(2**63), 2**63 - 1)

#: One event: (time, arrival sequence, row).
Member = tuple[int, int, dict]
#: One window: (key, start, end, position or None, members in (time, arrival) order).
Window = tuple[object, int, int, int | None, list[Member]]


def _windows(key: object, on_time: list[Member], spec: WindowSpec) -> list[Window]:
    """The windows of one key's on-time events."""
    on_time = sorted(on_time, key=lambda e: (e[0], e[1]))
    if spec.kind == "count":  # every `every` events, the last `size` of them
        every = spec.every_events
        return [_count_window(key, on_time, i, spec) for i in range(every, len(on_time) + 1, every)]
    if spec.kind == "session":  # runs of events less than the gap apart
        runs: list[list[Member]] = []
        for event in on_time:
            if not runs or event[0] - runs[-1][-1][0] >= spec.gap_us:
                runs.append([])
            runs[-1].append(event)
        return [(key, r[0][0], r[-1][0] + spec.gap_us, None, r) for r in runs]
    by_start: dict[int, list[Member]] = defaultdict(list)
    size = spec.size_us
    for event in on_time:
        t = event[0]
        start = t - t % spec.slide
        while start > t - size:  # every window [start, start + size) holding t
            by_start[start].append(event)
            start -= spec.slide
    return [(key, s, s + size, None, members) for s, members in by_start.items()]


def _count_window(key: object, released: list[Member], position: int, spec: WindowSpec
                  ) -> Window:
    """Count window ``position`` over the released events so far (all of its events once
    ``position`` events are released)."""
    members = released[max(0, position - spec.size_events):position]
    return (key, members[0][0], members[-1][0], position, members)


def _null(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or bool(
        pd.isna(value))


def _value(agg: Aggregate, members: list[Member], spec: WindowSpec) -> object:
    """One aggregate over the window's events, from scratch."""
    if agg.column is None:
        return len(members)
    col, fn = agg.column, agg.fn
    present = [(t, s, row) for t, s, row in members if not _null(row[col])]
    values = [row[col] for _, _, row in present]
    if fn == "count":
        return len(values)
    if fn == "count_distinct":
        return len(set(values))
    if fn == "approx_count_distinct":
        dtype = object if spec.value_types[col] == "string" else "float64"
        return int(np.rint(registers_estimate(np.array(values, dtype=dtype))))
    if fn in ("argmin", "argmax"):
        sign = 1 if fn == "argmin" else -1
        ranked = [(sign * row[agg.by], t, s, row[col]) for t, s, row in present
                  if not _null(row[agg.by])]
        return min(ranked)[3] if ranked else None
    if not values:
        return None
    if fn == "first":
        return min(present, key=lambda e: (e[0], e[1]))[2][col]
    if fn == "last":
        return max(present, key=lambda e: (e[0], e[1]))[2][col]
    if spec.value_types[col] == "int" and fn in ("sum", "avg"):  # exact: Python ints
        total = sum(int(v) for v in values)
        return total if fn == "sum" else total / len(values)
    return _numeric(agg, [float(v) for v in values], spec)


def _numeric(agg: Aggregate, values: list[float], spec: WindowSpec) -> object:
    fn = agg.fn
    if fn == "sum":
        return sum(values)
    if fn == "avg":
        return sum(values) / len(values)
    if fn in ("min", "max"):
        return min(values) if fn == "min" else max(values)
    if fn in ("variance", "stddev"):
        if len(values) < 2:
            return None
        variance = statistics.variance(values)
        return math.sqrt(variance) if fn == "stddev" else variance
    if fn in ("var_pop", "stddev_pop"):
        variance = statistics.pvariance(values)
        return math.sqrt(variance) if fn == "stddev_pop" else variance
    if fn in ("median", "percentile"):
        return float(np.quantile(np.array(values), agg.p))
    udaf = spec.udaf(fn)
    assert udaf is not None, fn
    return udaf.fold(values)


def _row(window: Window, spec: WindowSpec) -> dict:
    key, start, end, position, members = window
    out = {spec.key: key, "window_start": start, "window_end": end}
    if position is not None:
        out["position"] = position
    for agg in spec.aggregates:
        out[agg.name] = value = _value(agg, members, spec)
        if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
            raise WindowOverflowError("the window reference", agg.name, key, start, end)
    return out


def _arrivals(events: pd.DataFrame, spec: WindowSpec
              ) -> tuple[dict[object, list[tuple[int, int, dict, bool]]], list[int]]:
    """Per key, its events in arrival order as (seq, time, row, on time), and the late seqs."""
    by_key: dict[object, list[tuple[int, int, dict]]] = defaultdict(list)
    for row in events.to_dict("records"):
        by_key[row[spec.key]].append((int(row[SEQ]), int(row[TIME]), row))
    out: dict[object, list[tuple[int, int, dict, bool]]] = {}
    late: list[int] = []
    for key, items in by_key.items():
        items.sort(key=lambda item: item[0])
        max_seen = None
        out[key] = []
        for seq, t, row in items:
            on_time = max_seen is None or t >= max_seen - spec.lateness_us
            if on_time:
                max_seen = t if max_seen is None else max(max_seen, t)
            else:
                late.append(seq)
            out[key].append((seq, t, row, on_time))
    return out, sorted(late)


def _sorted_rows(rows: list[dict], spec: WindowSpec) -> list[dict]:
    return sorted(rows, key=lambda r: (str(r[spec.key]), r["window_start"], r.get("position", 0),
                                       r.get("batch", 0), r.get("final", True)))


def window_reference(events: pd.DataFrame, spec: WindowSpec) -> tuple[list[dict], list[int]]:
    """All windows of ``events`` (as dict rows) and the arrival sequence numbers of late events.

    In updates mode the rows are the final rows (``final`` true)."""
    arrivals, late = _arrivals(events, spec)
    rows: list[dict] = []
    for key, items in arrivals.items():
        on_time = [(t, seq, row) for seq, t, row, ok in items if ok]
        rows += [_row(w, spec) for w in _windows(key, on_time, spec)]
    if spec.emit == "updates":
        rows = [{**r, "final": True} for r in rows]
    return _sorted_rows(_having(rows, spec), spec), late


def window_updates_reference(events: pd.DataFrame, spec: WindowSpec, cuts: list[int]
                             ) -> tuple[list[dict], list[int]]:
    """Updates-mode output for the batch plan ``cuts`` (batch ``b`` holds the arrival sequence
    numbers ``cuts[b] <= seq < cuts[b + 1]``; the end-of-input flush is batch ``len(cuts) - 1``),
    each row with its ``final`` flag and the ``batch`` that emits it.

    After each batch with events of a key, from that key's on-time events so far: windows whose
    end the watermark has reached are emitted once, as final rows; open windows holding an
    on-time event of the batch are emitted as early rows (count windows: windows above the
    released count holding released events, when the batch releases events). The flush emits
    the remaining windows of the whole input as final rows."""
    arrivals, late = _arrivals(events, spec)
    flush = len(cuts) - 1
    rows: list[dict] = []
    for key, items in arrivals.items():
        batch_of = {seq: bisect_right(cuts, seq) - 1 for seq, *_ in items}
        done: set[int] = set()  # start (position for count windows) of emitted final rows
        released = 0
        for b in sorted(set(batch_of.values())):
            on_time = [(t, seq, row) for seq, t, row, ok in items if ok and batch_of[seq] <= b]
            watermark = max(t for t, _, _ in on_time) - spec.lateness_us
            if spec.kind == "count":
                ready = sorted((e for e in on_time if e[0] <= watermark),
                               key=lambda e: (e[0], e[1]))
                new, released = len(ready) > released, len(ready)
                every, size = spec.every_events, spec.size_events
                for p in range(every, released + size, every):
                    if p <= released and p not in done:
                        done.add(p)
                        rows.append({**_row(_count_window(key, ready, p, spec), spec),
                                     "final": True, "batch": b})
                    elif p > released and new:
                        rows.append({**_row(_count_window(key, ready, p, spec), spec),
                                     "final": False, "batch": b})
                continue
            for w in _windows(key, on_time, spec):
                ident = w[1]
                if w[2] <= watermark:
                    if ident not in done:
                        done.add(ident)
                        rows.append({**_row(w, spec), "final": True, "batch": b})
                elif any(batch_of[seq] == b for _, seq, _ in w[4]):
                    rows.append({**_row(w, spec), "final": False, "batch": b})
        on_time = [(t, seq, row) for seq, t, row, ok in items if ok]
        for w in _windows(key, on_time, spec):
            ident = w[3] if spec.kind == "count" else w[1]
            if ident not in done:
                rows.append({**_row(w, spec), "final": True, "batch": flush})
    return _sorted_rows(_having(rows, spec), spec), late


def _having(rows: list[dict], spec: WindowSpec) -> list[dict]:
    """The rows whose aggregates pass the spec's ``having`` (each row tested on its own)."""
    if spec.having is None:
        return rows
    return [r for r in rows if spec.having.evaluate_row(r) is True]

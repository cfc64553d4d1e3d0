"""Naive reference for tumbling, sliding, session and count windows: one pass per key over plain
Python lists.

Deliberately the simplest code path (no pandas groupby, no partial merging): the replay's output is
checked against it.
"""

from __future__ import annotations

from collections import defaultdict

import pandas as pd

from ..operator import SEQ, TIME
from .spec import WindowSpec

#: One window: (key, start, end, position or None, member rows).
Window = tuple[object, int, int, int | None, list[dict]]


def _windows(key: object, on_time: list[tuple[int, int, dict]], spec: WindowSpec
             ) -> list[Window]:
    """The windows of one key's on-time events ``(time, seq, row)``."""
    on_time = sorted(on_time, key=lambda e: (e[0], e[1]))
    if spec.kind == "count":  # every `every` events, the last `size` of them
        out = []
        for i in range(spec.slide, len(on_time) + 1, spec.slide):
            members = on_time[max(0, i - spec.size_us):i]
            out.append((key, members[0][0], members[-1][0], i, [m[2] for m in members]))
        return out
    if spec.kind == "session":  # runs of events less than the gap apart
        runs: list[list[tuple[int, int, dict]]] = []
        for event in on_time:
            if not runs or event[0] - runs[-1][-1][0] >= spec.size_us:
                runs.append([])
            runs[-1].append(event)
        return [(key, r[0][0], r[-1][0] + spec.size_us, None, [e[2] for e in r]) for r in runs]
    by_start: dict[int, list[dict]] = defaultdict(list)
    for t, _, row in on_time:
        start = t - t % spec.slide
        while start > t - spec.size_us:  # every window [start, start + size) holding t
            by_start[start].append(row)
            start -= spec.slide
    return [(key, s, s + spec.size_us, None, rows) for s, rows in by_start.items()]


def _aggregate(window: Window, spec: WindowSpec) -> dict:
    key, start, end, position, members = window
    out = {spec.key: key, "window_start": start, "window_end": end}
    if position is not None:
        out["position"] = position
    for agg in spec.aggregates:
        if agg.column is None:
            out[agg.name] = len(members)
            continue
        values = [m[agg.column] for m in members if not pd.isna(m[agg.column])]
        if agg.fn == "count":
            out[agg.name] = len(values)
        elif not values:
            out[agg.name] = None
        elif agg.fn == "sum":
            out[agg.name] = sum(values)
        elif agg.fn == "avg":
            out[agg.name] = sum(values) / len(values)
        else:
            out[agg.name] = float(min(values) if agg.fn == "min" else max(values))
    return out


def window_reference(events: pd.DataFrame, spec: WindowSpec) -> tuple[list[dict], list[int]]:
    """All windows of ``events`` (as dict rows) and the arrival sequence numbers of late events."""
    by_key: dict[object, list[tuple[int, int, dict]]] = defaultdict(list)
    for row in events.to_dict("records"):
        by_key[row[spec.key]].append((int(row[SEQ]), int(row[TIME]), row))
    rows: list[dict] = []
    late: list[int] = []
    for key, items in by_key.items():
        items.sort(key=lambda item: item[0])
        max_seen = None
        on_time = []
        for seq, t, row in items:
            if max_seen is not None and t < max_seen - spec.lateness_us:
                late.append(seq)
                continue
            max_seen = t if max_seen is None else max(max_seen, t)
            on_time.append((t, seq, row))
        rows += [_aggregate(w, spec) for w in _windows(key, on_time, spec)]
    rows.sort(key=lambda r: (str(r[spec.key]), r["window_start"], r.get("position", 0)))
    return rows, sorted(late)

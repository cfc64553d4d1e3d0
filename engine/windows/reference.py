"""Naive reference for tumbling, sliding and session windows: one pass per key over plain
Python lists.

Deliberately the simplest code path (no pandas groupby, no partial merging): the replay's output is
checked against it.
"""

from __future__ import annotations

from collections import defaultdict

import pandas as pd

from ..operator import SEQ, TIME
from .spec import WindowSpec


def window_reference(events: pd.DataFrame, spec: WindowSpec) -> tuple[list[dict], list[int]]:
    """All windows of ``events`` (as dict rows) and the arrival sequence numbers of late events."""
    by_key: dict[object, list[tuple[int, int, dict]]] = defaultdict(list)
    for row in events.to_dict("records"):
        by_key[row[spec.key]].append((int(row[SEQ]), int(row[TIME]), row))
    windows: dict[tuple[object, int], list[dict]] = defaultdict(list)
    ends: dict[tuple[object, int], int] = {}
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
            on_time.append((t, row))
        if spec.kind == "session":  # runs of events less than the gap apart
            on_time.sort(key=lambda item: item[0])
            start = last = None
            for t, row in on_time:
                if last is None or t - last >= spec.size_us:
                    start = t
                last = t
                windows[(key, start)].append(row)
                ends[(key, start)] = t + spec.size_us
            continue
        for t, row in on_time:
            start = t - t % spec.slide
            while start > t - spec.size_us:  # every window [start, start + size) holding t
                windows[(key, start)].append(row)
                start -= spec.slide
    rows = []
    for (key, start), members in windows.items():
        out = {spec.key: key, "window_start": start,
               "window_end": ends.get((key, start), start + spec.size_us)}
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
        rows.append(out)
    rows.sort(key=lambda r: (str(r[spec.key]), r["window_start"]))
    return rows, sorted(late)

"""Brute-force window aggregates for the sharing tests: each window computed directly from its
rows (NULLs ignored as in SQL), independent of panes and of the planner."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from engine.sharing import AggregateView, SharingView


def _clean(value: Any) -> Any:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def aggregate(fn: str, values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    if fn == "count":
        return len(present)
    if fn == "sum":
        return sum(present) if present else None
    if fn == "avg":
        return sum(present) / len(present) if present else None
    if fn == "min":
        return min(present) if present else None
    if fn == "max":
        return max(present) if present else None
    raise ValueError(fn)


def _row_values(rows: list[dict], agg: AggregateView) -> list[Any]:
    if agg.column is None:
        return [1] * len(rows)
    return [_clean(r[agg.column]) for r in rows]


def direct_windows(view: SharingView, frame: pd.DataFrame) -> list[tuple]:
    """(key, window, aggregates...) of ``view`` over the rows of ``frame`` passing its
    ``where``, its ``having`` applied; window: the start (time) or the last position (count)."""
    w = view.window
    assert w is not None
    rows = frame.loc[view.where.evaluate(frame)].to_dict("records")
    by_key: dict[Any, list[dict]] = {}
    for r in rows:
        by_key.setdefault(r[view.key] if view.key else 0, []).append(r)
    out = []
    for key, events in by_key.items():
        windows: dict[int, list[dict]] = {}
        if w.kind == "time":
            for r in events:
                t = int(r[w.time])
                k = (t - w.size) // w.slide + 1
                while k * w.slide <= t:
                    windows.setdefault(k * w.slide, []).append(r)
                    k += 1
        else:
            events = sorted(events, key=lambda r: (int(r[w.time]), r["seq"]))
            for k in range(1, len(events) // w.slide + 1):
                end = k * w.slide
                windows[end] = events[max(0, end - w.size):end]
        for start, members in windows.items():
            values = {a.name: aggregate(a.fn, _row_values(members, a)) for a in view.aggregates}
            if view.having is not None and view.having.evaluate_row(values) is not True:
                continue
            out.append((key, start, *(values[a.name] for a in view.aggregates)))
    return sorted(out, key=lambda r: (str(r[0]), r[1]))


def frame_windows(view: SharingView, windows: pd.DataFrame) -> list[tuple]:
    """The rows of a :func:`~engine.sharing.partials.windows_from_panes` result as tuples."""
    out = []
    for r in windows.to_dict("records"):
        out.append((r["__key"], int(r["__window"]),
                    *(_clean(r[a.name]) for a in view.aggregates)))
    return sorted(out, key=lambda r: (str(r[0]), r[1]))


def same(left: list[tuple], right: list[tuple]) -> bool:
    """Equal rows; ints exactly, doubles within 1e-9 relative."""
    if len(left) != len(right):
        return False
    for a, b in zip(left, right, strict=True):
        for x, y in zip(a, b, strict=True):
            if isinstance(x, float) or isinstance(y, float):
                if x is None or y is None or not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12):
                    return False
            elif x != y:
                return False
    return True

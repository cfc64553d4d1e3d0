"""Pane-level evaluation (pure, over a whole frame): the partial states of tumbling panes, and a
query's window aggregates assembled from them.

Partial states: ``count(*)`` (rows), ``count(c)`` (non-null values of c), ``sum(c)`` (NULL when
the pane has no non-null value), ``min(c)``, ``max(c)`` (NULLs ignored). A time pane ``j`` holds
the rows with ``j * pane <= t < (j + 1) * pane`` (t in microseconds); a count pane ``j`` holds a
key's events at positions ``j * pane .. (j + 1) * pane - 1`` in (time, arrival) order. Rows
have a unique index and no NULL key or time (the runner quarantines those before any query).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .view import AggregateView

_STATE = re.compile(r"^(count|sum|min|max)\((\*|[^()]+)\)$")
KEY, PANE, WINDOW = "__key", "__pane", "__window"


def _micros(column: pd.Series) -> pd.Series:
    if pd.api.types.is_integer_dtype(column.dtype):
        return column.astype("int64")
    return pd.to_datetime(column, utc=True).dt.as_unit("us").astype("int64")


def pane_partials(rows: pd.DataFrame, *, kind: str, pane: int, key: str | None, time: str,
                  states: tuple[str, ...] | list[str], order: tuple[str, ...] = ()
                  ) -> pd.DataFrame:
    """One row per (key, pane) holding rows, with a column per partial state; ``order``: the
    tie-break columns after ``time`` that order a key's events for count panes (arrival)."""
    frame = pd.DataFrame(index=rows.index)
    frame[KEY] = rows[key] if key is not None else 0
    t = _micros(rows[time])
    if kind == "time":
        frame[PANE] = t // pane
    else:
        ordered = pd.concat([frame[[KEY]], t.rename("__t"), rows[list(order)]], axis=1)
        ordered = ordered.sort_values(["__t", *order], kind="stable")
        position = ordered.groupby(KEY, sort=False).cumcount()
        frame[PANE] = position.reindex(rows.index) // pane
    groups = []
    for state in states:
        fn, arg = _STATE.match(state).groups()  # type: ignore[union-attr]
        values = pd.Series(1, index=rows.index) if arg == "*" else rows[arg]
        grouped = values.groupby([frame[KEY], frame[PANE]], sort=True)
        if fn == "count":
            part = grouped.count()
        elif fn == "sum":
            part = grouped.sum(min_count=1)
        else:
            part = grouped.min() if fn == "min" else grouped.max()
        groups.append(part.rename(state))
    if not groups:
        raise ValueError("a pane group keeps at least one partial state")
    return pd.concat(groups, axis=1).reset_index()


def _merge(windows: pd.DataFrame, states: list[str]) -> pd.DataFrame:
    grouped = windows.groupby([KEY, WINDOW], sort=True)
    parts = []
    for state in states:
        fn = state.split("(")[0]
        if fn in ("count", "sum"):
            parts.append(grouped[state].sum(min_count=1 if fn == "sum" else 0))
        else:
            parts.append(grouped[state].min() if fn == "min" else grouped[state].max())
    return pd.concat(parts, axis=1).reset_index()


def _finalise(merged: pd.DataFrame, aggregates: tuple[AggregateView, ...]) -> pd.DataFrame:
    out = merged[[KEY, WINDOW]].copy()
    for agg in aggregates:
        states = agg.states
        if agg.fn == "avg":
            total = merged[states[0]].astype("float64")
            count = merged[states[1]].astype("float64")
            out[agg.name] = np.where(count > 0, total / count.where(count > 0, 1.0), np.nan)
        else:
            out[agg.name] = merged[states[0]]
    return out


def windows_from_panes(partials: pd.DataFrame, *, kind: str, pane: int, size: int, slide: int,
                       aggregates: tuple[AggregateView, ...]) -> pd.DataFrame:
    """A query's windows from pane partials: columns ``__key``, ``__window`` (time: the window
    start in microseconds; count: the position, from 1, of the window's last event) and one per
    aggregate. A time window is emitted when one of its panes holds rows; a count window when
    its last pane is full (a key's trailing partial group emits nothing)."""
    assert size % pane == 0 and slide % pane == 0, "the pane must divide size and slide"
    n, u = size // pane, slide // pane
    states = sorted({s for a in aggregates for s in a.states})
    pieces = []
    for m in range(n):
        # time: window k covers panes k*u .. k*u+n-1; count: window k (from 1) ends with the
        # event at position k*slide - 1, so covers panes k*u-n .. k*u-1
        offset = partials[PANE] - m if kind == "time" else partials[PANE] + n - m
        keep = offset % u == 0
        pieces.append(partials[keep].assign(**{WINDOW: offset[keep] // u}))
    windows = pd.concat(pieces, ignore_index=True)
    if kind == "count":
        full = partials[partials["count(*)"] == pane]
        last = (full[PANE] + 1) % u == 0
        ends = full.loc[last, [KEY, PANE]].assign(**{WINDOW: (full.loc[last, PANE] + 1) // u})
        windows = windows.merge(ends[[KEY, WINDOW]], on=[KEY, WINDOW])
    merged = _merge(windows, states)
    out = _finalise(merged, aggregates)
    out[WINDOW] = out[WINDOW] * slide
    return out.sort_values([KEY, WINDOW], ignore_index=True)

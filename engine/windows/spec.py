"""The ``kind: window`` query spec: window shape and named aggregates."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..catalog import CatalogError, QuerySpec, RecordingSpec, parse_duration_us

AGGREGATES = ("count", "sum", "min", "max", "avg")
WINDOW_KINDS = ("tumbling", "sliding", "session", "count")
NUMERIC = ("int", "double")
_CALL = re.compile(r"^\s*([a-z_]+)\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)?\s*\)\s*$")


@dataclass(frozen=True)
class Aggregate:
    """``name = fn(column)``; ``column`` is None for ``count()``."""

    name: str
    fn: str
    column: str | None


@dataclass(frozen=True)
class WindowSpec:
    """A per-key event-time window aggregate."""

    key: str
    size_us: int
    lateness_us: int
    aggregates: tuple[Aggregate, ...]
    value_types: dict[str, str]  # aggregated column -> recording type
    key_type: str
    slide_us: int | None = None  # None: tumbling (slide = size)
    kind: str = "tumbling"  # tumbling | sliding | session (size_us: the gap) | count (size_us:
    # events per window, slide_us: events between emissions)

    @property
    def slide(self) -> int:
        return self.slide_us or self.size_us

    @property
    def value_columns(self) -> list[str]:
        return sorted(self.value_types)


def parse_window_query(query: QuerySpec, recording: RecordingSpec) -> WindowSpec:
    """Check the ``query`` block of a window query against its recording."""
    src = query.source
    body: Any = query.query
    if not isinstance(body, dict):
        raise CatalogError(src, "query", "expected a mapping with 'window' and 'aggregates'")
    window = body.get("window")
    if not isinstance(window, dict) or window.get("type") not in WINDOW_KINDS:
        raise CatalogError(src, "query.window",
                           "expected {type: tumbling, size: D}, {type: sliding, size: D, "
                           "slide: D}, {type: session, gap: D} or {type: count, size: N, "
                           f"every: M}}, got {window!r}")
    if window["type"] == "count":
        return _count_window(query, recording, window)
    measure = "gap" if window["type"] == "session" else "size"
    size = parse_duration_us(window.get(measure, ""), source=src,
                             fieldname=f"query.window.{measure}")
    if size <= 0:
        raise CatalogError(src, f"query.window.{measure}", "must be positive")
    slide = None
    if window["type"] == "sliding":
        slide = parse_duration_us(window.get("slide", ""), source=src,
                                  fieldname="query.window.slide")
        if slide <= 0 or slide > size:
            raise CatalogError(src, "query.window.slide",
                               f"must be positive and at most the size ({size} us), got {slide}")
    aggregates, value_types = _aggregates(query, recording)
    return WindowSpec(key=query.key or recording.key, size_us=size, lateness_us=query.lateness_us,
                      aggregates=aggregates, value_types=value_types,
                      key_type=recording.columns[query.key or recording.key], slide_us=slide,
                      kind=window["type"])

def _aggregates(query: QuerySpec, recording: RecordingSpec
                ) -> tuple[tuple[Aggregate, ...], dict[str, str]]:
    """The ``query.aggregates`` mapping, checked against the recording."""
    src, body = query.source, query.query
    aggs = body.get("aggregates")
    if not isinstance(aggs, dict) or not aggs:
        raise CatalogError(src, "query.aggregates",
                           "expected a non-empty mapping name: fn(column), "
                           "e.g. hr: avg(heart_rate)")
    parsed, value_types = [], {}
    reserved = {query.key, "window_start", "window_end", "batch"}
    for name, text in aggs.items():
        where = f"query.aggregates.{name}"
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(name)) or name in reserved:
            raise CatalogError(src, where, f"output name {name!r} is not an identifier or is "
                               f"reserved ({', '.join(sorted(map(str, reserved)))})")
        m = _CALL.match(str(text))
        if not m or m.group(1) not in AGGREGATES:
            raise CatalogError(src, where, f"expected one of {', '.join(AGGREGATES)} applied to a "
                               f"column, e.g. avg(heart_rate) or count(), got {text!r}")
        fn, col = m.group(1), m.group(2)
        if fn == "count" and col is None:
            parsed.append(Aggregate(name, fn, None))
            continue
        if col is None:
            raise CatalogError(src, where, f"{fn}() needs a column")
        if col not in recording.columns:
            raise CatalogError(src, where, f"column {col!r} is not in recording {recording.name!r}")
        if fn != "count" and recording.columns[col] not in NUMERIC:
            raise CatalogError(src, where, f"{fn} needs a numeric column; {col!r} has type "
                               f"{recording.columns[col]}")
        value_types[col] = recording.columns[col]
        parsed.append(Aggregate(name, fn, col))
    return tuple(parsed), value_types


def _count_window(query: QuerySpec, recording: RecordingSpec, window: dict) -> WindowSpec:
    src = query.source
    size, every = window.get("size"), window.get("every", window.get("size"))
    for name, value in (("size", size), ("every", every)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise CatalogError(src, f"query.window.{name}",
                               f"expected a positive number of events, got {value!r}")
    aggregates, value_types = _aggregates(query, recording)
    key = query.key or recording.key
    return WindowSpec(key=key, size_us=size, lateness_us=query.lateness_us,
                      aggregates=aggregates, value_types=value_types,
                      key_type=recording.columns[key], slide_us=every, kind="count")

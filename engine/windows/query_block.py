"""Reading a ``kind: window`` query block into its :class:`~engine.windows.spec.WindowSpec`,
checked against the aggregates' plan (state columns distinct, ``having`` over their outputs)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ..predicate import PredicateError, parse_predicate
from ..specs import CatalogError, QuerySpec, RecordingSpec, check_fields, parse_duration_us
from .aggregates import Plan
from .having import CATALOG_TYPES
from .spec import (
    AGGREGATES,
    EMIT_MODES,
    MAX_DURATION_US,
    MAX_EVENTS,
    NUMERIC,
    SIGNATURES,
    WINDOW_FIELDS,
    WINDOW_KINDS,
    Aggregate,
    WindowSpec,
)
from .udaf import Udaf, UdafError, parse_udaf

_QUERY_FIELDS = ("window", "aggregates", "emit", "udafs", "having")
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_CALL = re.compile(rf"^\s*({_IDENT})\s*\((.*)\)\s*$", re.DOTALL)


def parse_window_query(query: QuerySpec, recording: RecordingSpec) -> WindowSpec:
    """Check the ``query`` block of a window query against its recording."""
    src = query.source
    body: Any = query.query
    if not isinstance(body, dict):
        raise CatalogError(src, "query", "expected a mapping with 'window' and 'aggregates'")
    unknown = sorted(set(map(str, body)) - set(_QUERY_FIELDS))
    if unknown:
        raise CatalogError(src, f"query.{unknown[0]}", "unknown field (expected "
                           f"{', '.join(_QUERY_FIELDS)})")
    if query.lateness_us > MAX_DURATION_US:
        raise CatalogError(src, "lateness", _too_long(query.lateness_us))
    window = body.get("window")
    if not isinstance(window, dict) or window.get("type") not in WINDOW_KINDS:
        raise CatalogError(src, "query.window",
                           "expected {type: tumbling, size: D}, {type: sliding, size: D, "
                           "slide: D}, {type: session, gap: D} or {type: count, size: N, "
                           f"every: M}}, got {window!r}")
    check_fields(window, WINDOW_FIELDS[window["type"]], src, "query.window")
    emit = body.get("emit", "close")
    if emit not in EMIT_MODES:
        raise CatalogError(src, "query.emit", f"expected close or updates, got {emit!r}")
    udafs = _udafs(src, body.get("udafs"))
    aggregates, value_types = _aggregates(query, recording, udafs)
    key = query.key or recording.key
    common = {"key": key, "lateness_us": query.lateness_us, "aggregates": aggregates,
              "value_types": value_types, "key_type": recording.columns[key],
              "kind": window["type"], "udafs": udafs, "emit": emit}
    return _having(src, body.get("having"), _shaped(src, window, common))


def _shaped(src: str, window: dict, common: dict[str, Any]) -> WindowSpec:
    """The spec of the window shape ``window`` (its fields checked) with ``common`` fields."""
    if window["type"] == "count":
        size, every = window.get("size"), window.get("every", window.get("size"))
        for name, value in (("size", size), ("every", every)):
            if isinstance(value, bool) or not isinstance(value, int) or not \
                    0 < value <= MAX_EVENTS:
                raise CatalogError(src, f"query.window.{name}", "expected a positive number of "
                                   f"events, at most {MAX_EVENTS:,}, got {value!r}")
        if every > size:
            raise CatalogError(src, "query.window.every", f"must be at most the size ({size} "
                               f"events): events between two windows would belong to none, "
                               f"got {every}")
        return _checked(src, WindowSpec(size_events=size, every_events=every, **common))
    measure = "gap" if window["type"] == "session" else "size"
    size = _duration(src, window, measure)
    if window["type"] == "session":
        return _checked(src, WindowSpec(gap_us=size, **common))
    slide = 0
    if window["type"] == "sliding":
        slide = _duration(src, window, "slide")
        if slide > size:
            raise CatalogError(src, "query.window.slide",
                               f"must be at most the size ({size} us): events between two "
                               f"windows would belong to none, got {slide}")
    return _checked(src, WindowSpec(size_us=size, slide_us=slide, **common))


def _duration(src: str, window: dict, name: str) -> int:
    """The positive duration ``query.window.<name>``, at most :data:`MAX_DURATION_US`."""
    where = f"query.window.{name}"
    value = parse_duration_us(window.get(name, ""), source=src, fieldname=where)
    if value <= 0:
        raise CatalogError(src, where, "must be positive")
    if value > MAX_DURATION_US:
        raise CatalogError(src, where, _too_long(value))
    return value


def _too_long(us: int) -> str:
    return (f"must be at most 36500d (100 years, {MAX_DURATION_US} us) so that arithmetic on "
            f"event times cannot overflow, got {us} us")


def _having(src: str, text: Any, spec: WindowSpec) -> WindowSpec:
    """``spec`` with the ``query.having`` predicate over its aggregates' output names."""
    if text is None:
        return spec
    if not isinstance(text, str) or not text.strip():
        raise CatalogError(src, "query.having", "expected a SQL condition over the aggregates "
                           f"such as 'readings >= 10', got {text!r}")
    outputs = {f.name: CATALOG_TYPES[f.type] for f in Plan(spec).output_fields()
               if f.type in CATALOG_TYPES}
    try:
        return dataclasses.replace(spec, having=parse_predicate(text, outputs))
    except PredicateError as exc:
        raise CatalogError(src, "query.having", str(exc)) from exc


def _checked(src: str, spec: WindowSpec) -> WindowSpec:
    """``spec`` if its state columns are distinct (a key column may not be named like one)."""
    try:
        Plan(spec)
    except ValueError as exc:
        raise CatalogError(src, "query.aggregates", str(exc)) from exc
    return spec


def _udafs(src: str, block: Any) -> tuple[Udaf, ...]:
    """The ``query.udafs`` mapping: name -> {init, add, merge, finish}."""
    if block is None:
        return ()
    if not isinstance(block, dict):
        raise CatalogError(src, "query.udafs", "expected a mapping name: {init: ..., add: ..., "
                           "merge: ..., finish: ...}")
    out = []
    for name, parts in block.items():
        where = f"query.udafs.{name}"
        if not re.fullmatch(_IDENT, str(name)) or name in SIGNATURES:
            raise CatalogError(src, where, f"udaf name {name!r} must be an identifier that is "
                               "not a built-in aggregate")
        if not isinstance(parts, dict):
            raise CatalogError(src, where, "expected {init: ..., add: ..., merge: ..., "
                               "finish: ...}")
        try:
            out.append(parse_udaf(str(name), parts))
        except UdafError as exc:
            raise CatalogError(src, f"{where}.{exc.part}" if exc.part else where,
                               str(exc)) from exc
    return tuple(out)


def _aggregates(query: QuerySpec, recording: RecordingSpec, udafs: tuple[Udaf, ...]
                ) -> tuple[tuple[Aggregate, ...], dict[str, str]]:
    """The ``query.aggregates`` mapping, checked against the recording."""
    src, body = query.source, query.query
    aggs = body.get("aggregates")
    if not isinstance(aggs, dict) or not aggs:
        raise CatalogError(src, "query.aggregates",
                           "expected a non-empty mapping name: fn(column), "
                           "e.g. hr: avg(heart_rate)")
    parsed, value_types = [], {}
    reserved = {query.key or recording.key, "window_start", "window_end", "batch", "position",
                "final"}
    names = {u.name: u for u in udafs}
    for name, text in aggs.items():
        where = f"query.aggregates.{name}"
        if not isinstance(name, str) or not re.fullmatch(_IDENT, name) or name in reserved:
            raise CatalogError(src, where, f"output name {name!r} is not an identifier or is "
                               f"reserved ({', '.join(sorted(map(str, reserved)))})")
        m = _CALL.match(str(text))
        if not m:
            raise CatalogError(src, where, f"expected fn(column), e.g. avg(heart_rate) or "
                               f"count(), got {text!r}")
        fn = m.group(1)
        args = [a.strip() for a in m.group(2).split(",")] if m.group(2).strip() else []
        if fn in names:
            signature: tuple[tuple[str, ...], tuple[str, ...] | None] = (("column",), NUMERIC)
        elif fn in SIGNATURES:
            signature = SIGNATURES[fn]
        else:
            known = ", ".join([*AGGREGATES, *names])
            raise CatalogError(src, where, f"unknown aggregate {fn!r} (known: {known}); "
                               "user-declared aggregates go under query.udafs")
        agg = _call(src, where, fn, args, signature, recording, value_types, name)
        parsed.append(agg)
    return tuple(parsed), value_types


def _call(src: str, where: str, fn: str, args: list[str],
          signature: tuple[tuple[str, ...], tuple[str, ...] | None], recording: RecordingSpec,
          value_types: dict[str, str], name: str) -> Aggregate:
    """Check one call's arguments against its signature; record the columns it reads."""
    kinds, types = signature
    required = sum(1 for k in kinds if not k.endswith("?"))
    if not required <= len(args) <= len(kinds):
        shown = ", ".join(k.rstrip("?") for k in kinds)
        arity = f"{required} to {len(kinds)}" if required != len(kinds) else str(required)
        raise CatalogError(src, where, f"{fn} takes {arity} argument(s) ({shown}), "
                           f"got {len(args)}")
    columns: list[str] = []
    p = None
    for kind, arg in zip(kinds, args, strict=False):
        if kind == "fraction":
            try:
                p = float(arg)
            except ValueError:
                p = None
            if p is None or not 0.0 <= p <= 1.0:
                raise CatalogError(src, where, f"{fn} needs a fraction between 0 and 1 as its "
                                   f"last argument (0.9 for the 90th percentile), got {arg!r}")
            continue
        if not re.fullmatch(_IDENT, arg):
            raise CatalogError(src, where, f"{fn}: argument {arg!r} is not a column name")
        if arg not in recording.columns:
            raise CatalogError(src, where, f"column {arg!r} is not in recording "
                               f"{recording.name!r}")
        typ = recording.columns[arg]
        wanted = NUMERIC if columns else types  # argmin/argmax order by a numeric column
        if wanted is not None and typ not in wanted:
            raise CatalogError(src, where, f"{fn} needs a column of type "
                               f"{' or '.join(wanted)}; {arg!r} has type {typ}")
        columns.append(arg)
        value_types[arg] = typ
    if fn == "median":
        p = 0.5
    return Aggregate(name, fn, columns[0] if columns else None,
                     by=columns[1] if len(columns) > 1 else None, p=p)

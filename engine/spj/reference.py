"""Naive reference: evaluate the query over the full history, in plain Python."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from .model import Aggregate, Atom, Attr, Const, Query
from .parse import Schemas, parse

Row = Mapping[str, Any]
Streams = Mapping[str, Sequence[Row]]
Result = Counter | set


def _has_null(atom: Atom, env: dict[Attr, Any]) -> bool:
    return any(isinstance(t, Attr) and env[t] is None for t in (atom.left, atom.right))


def _matches(query: Query, streams: Streams) -> list[dict[Attr, Any]]:
    """All assignments of one tuple per occurrence that satisfy every atom (nested loops)."""
    occs = list(query.occurrences)
    checks: list[list] = [[] for _ in occs]
    for atom in query.atoms:
        at = [occs.index(t.occ) for t in (atom.left, atom.right) if isinstance(t, Attr)]
        checks[max(at, default=0)].append(atom)
    out: list[dict[Attr, Any]] = []

    def go(i: int, env: dict[Attr, Any]) -> None:
        if i == len(occs):
            out.append(dict(env))
            return
        for row in streams.get(query.occurrences[occs[i]], ()):
            for a in query.attrs(occs[i]):
                env[a] = row.get(a.name)
            # NULL in a compared attribute never satisfies a comparison (not even NULL = NULL)
            ok = all(not _has_null(atom, env) and atom.holds(env) for atom in checks[i])
            if ok:
                go(i + 1, env)

    go(0, {})
    return out


def _aggregate(agg: Aggregate, envs: list[dict[Attr, Any]]) -> Any:
    if agg.arg is None:
        return len(envs)
    vals = [e[agg.arg] for e in envs if e[agg.arg] is not None]
    if agg.func == "COUNT":
        return len(vals)
    if agg.func == "COUNT_DISTINCT":
        return len(set(vals))
    if not vals:
        return None
    if agg.func == "SUM":
        return sum(vals)
    if agg.func == "AVG":
        return Fraction(sum(vals), len(vals))
    if agg.func == "MEDIAN":
        return statistics.median(Fraction(v) for v in vals)
    return min(vals) if agg.func == "MIN" else max(vals)


def evaluate(query: Query, streams: Streams) -> Result:
    """Output bag (Counter of rows) or set of rows; aggregate queries give one row per group."""
    envs = _matches(query, streams)
    if not query.aggregate:
        rows = [tuple(o.value if isinstance(o, Const) else e[o] for o in query.output)
                for e in envs]
        return set(rows) if query.distinct else Counter(rows)
    groups: dict[tuple, list[dict[Attr, Any]]] = {}
    for e in envs:
        groups.setdefault(tuple(e[g] for g in query.group_by), []).append(e)
    if not query.group_by and not groups:
        groups[()] = []
    result = set()
    for key, members in groups.items():
        at = dict(zip(query.group_by, key, strict=True))
        result.add(tuple(at[o] if isinstance(o, Attr) else o.value if isinstance(o, Const)
                         else _aggregate(o, members) for o in query.output))
    return result


def reference(sql: str, schemas: Schemas, streams: Streams,
              timestamps: Mapping[str, str] | None = None) -> Result:
    """Naive evaluation of ``sql`` over ``streams`` (stream name -> rows in arrival order)."""
    return evaluate(parse(sql, schemas, timestamps), streams)

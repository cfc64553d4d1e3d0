"""SQL text of atoms and constants; every atom's text stands alone (parenthesised when it holds
AND or OR), so AND/OR nodes join their operands' texts without further quoting."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import sqlglot
from sqlglot import exp

from .values import FULL, Interval, ValueSet, complement, timestamp_text

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@lru_cache(maxsize=4096)
def column_sql(name: str) -> str:
    """``name`` as an SQL identifier: plain when it parses back as that column, else quoted."""
    if _PLAIN.match(name):
        try:
            node = sqlglot.parse_one(f"{name} IS NULL")
        except sqlglot.errors.SqlglotError:
            node = None
        if isinstance(node, exp.Is) and isinstance(node.this, exp.Column) \
                and node.this.name == name and not node.this.table:
            return name
    return '"' + name.replace('"', '""') + '"'


def literal_sql(ctype: str, value: Any) -> str:
    """A constant of ``ctype`` as SQL text."""
    if ctype == "bool":
        return "TRUE" if value else "FALSE"
    if ctype == "int":
        return str(int(value))
    if ctype == "double":
        return repr(float(value))
    text = timestamp_text(value) if ctype == "timestamp" else value
    return "'" + text.replace("'", "''") + "'"


def _range_sql(col: str, ctype: str, iv: Interval) -> str:
    lo = None if iv.lo is None else literal_sql(ctype, iv.lo)
    hi = None if iv.hi is None else literal_sql(ctype, iv.hi)
    if lo is None:
        return f"{col} {'<=' if iv.hi_closed else '<'} {hi}"
    if hi is None:
        return f"{col} {'>=' if iv.lo_closed else '>'} {lo}"
    if iv.lo_closed and iv.hi_closed:
        return f"{col} BETWEEN {lo} AND {hi}"
    above = f"{col} {'>=' if iv.lo_closed else '>'} {lo}"
    return f"{above} AND {col} {'<=' if iv.hi_closed else '<'} {hi}"


def _points_sql(col: str, ctype: str, points: list[Any], negated: bool) -> str:
    if len(points) == 1:
        return f"{col} {'<>' if negated else '='} {literal_sql(ctype, points[0])}"
    listed = ", ".join(literal_sql(ctype, p) for p in points)
    return f"{col} {'NOT IN' if negated else 'IN'} ({listed})"


def render_atom(column: str, ctype: str, values: ValueSet | None) -> str:
    """SQL text of ``column IS NULL`` (``values`` None) or of ``column ∈ values``."""
    col = column_sql(column)
    if values is None:
        return f"{col} IS NULL"
    if values == FULL:
        return f"{col} IS NOT NULL"
    if all(iv.is_point for iv in values):
        return _points_sql(col, ctype, [iv.lo for iv in values], negated=False)
    rest = complement(ctype, values)
    if rest and all(iv.is_point for iv in rest):
        return _points_sql(col, ctype, [iv.lo for iv in rest], negated=True)
    points = [iv.lo for iv in values if iv.is_point]
    parts = ([_points_sql(col, ctype, points, negated=False)] if points else []) + \
        [_range_sql(col, ctype, iv) for iv in values if not iv.is_point]
    text = " OR ".join(parts)
    two_sided = not values[0].is_point and values[0].lo is not None and values[0].hi is not None
    return f"({text})" if len(parts) > 1 or two_sided else text

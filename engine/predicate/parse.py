"""Parsing a row predicate in SQL syntax (with sqlglot) into the canonical form, checked against
the column types of the rows it filters.

NOT is pushed onto the atoms with SQL's three-valued rules: De Morgan over AND/OR, a negated
comparison, ``IN`` or ``BETWEEN`` becomes the complement value set (NULL stays UNKNOWN), a
negated ``IS NULL`` becomes ``IS NOT NULL`` and the other way round.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import sqlglot
import sqlglot.errors
from sqlglot import exp

from ..errors import RepriseError
from .form import FALSE, TRUE, Pred, in_set, is_null
from .logic import conjoin, disjoin
from .values import (
    FULL,
    INT64_MAX,
    INT64_MIN,
    Interval,
    ValueSet,
    complement,
    normalise,
    point,
    timestamp_us,
)

#: The deepest nesting of parentheses, NOT, AND/OR alternations a predicate may have.
MAX_DEPTH = 48


class PredicateError(RepriseError):
    """A predicate that does not parse or does not fit the columns it reads."""


_COMPARISONS: dict[type, str] = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=",
                                 exp.GT: ">", exp.GTE: ">="}
_FLIPPED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _paren_depth(text: str) -> int:
    depth = deepest = 0
    quote: str | None = None
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth -= 1
    return deepest


def parse_predicate(text: str, columns: Mapping[str, str]) -> Pred:
    """The canonical form of the SQL predicate ``text`` over ``columns`` (name -> type: int,
    double, string, bool, timestamp); a problem raises a :class:`PredicateError`."""
    if not isinstance(text, str) or not text.strip():
        raise PredicateError(f"expected an SQL condition, got {text!r}")
    if _paren_depth(text) > MAX_DEPTH:
        raise PredicateError(f"nests parentheses deeper than {MAX_DEPTH} levels")
    try:
        tree = sqlglot.parse_one(text)
    except sqlglot.errors.SqlglotError as exc:
        problem = str(exc).splitlines()[0].replace("\x1b[4m", "").replace("\x1b[0m", "")
        raise PredicateError(f"cannot parse {text.strip()!r}: {problem}") from None
    except RecursionError:
        raise PredicateError(f"nests deeper than {MAX_DEPTH} levels") from None
    return _Converter(columns).convert(tree, negated=False, depth=0)


class _Converter:
    def __init__(self, columns: Mapping[str, str]):
        self.columns = dict(columns)

    def convert(self, node: exp.Expression, negated: bool, depth: int) -> Pred:
        if depth > MAX_DEPTH:
            raise PredicateError(f"nests deeper than {MAX_DEPTH} levels")
        if isinstance(node, exp.Paren):
            return self.convert(node.this, negated, depth + 1)
        if isinstance(node, exp.Not):
            return self.convert(node.this, not negated, depth + 1)
        if isinstance(node, (exp.And, exp.Or)):
            parts = [self.convert(p, negated, depth + 1) for p in _chain(node)]
            conjunction = isinstance(node, exp.And) != negated  # De Morgan
            return conjoin(*parts) if conjunction else disjoin(*parts)
        if isinstance(node, exp.Boolean):
            return FALSE if node.this == negated else TRUE
        if isinstance(node, exp.Column):
            name, ctype = self.column(node)
            if ctype != "bool":
                raise PredicateError(f"column {name!r} has type {ctype}, it is not a condition")
            return in_set(name, ctype, (point(not negated),))
        if isinstance(node, exp.Is):
            return self.is_test(node, negated)
        if type(node) in _COMPARISONS:
            return self.comparison(node, negated)
        if isinstance(node, exp.Between):
            name, ctype = self.column(node.this, node)
            low, high = self.constant(node.args["low"], name, ctype), \
                self.constant(node.args["high"], name, ctype)
            return self.atom(name, ctype, [Interval(low, True, high, True)], negated)
        if isinstance(node, exp.In):
            if node.args.get("query") or node.args.get("unnest") or not node.expressions:
                raise PredicateError(f"IN needs a list of constants: {node.sql()!r}")
            name, ctype = self.column(node.this, node)
            points = [point(self.constant(e, name, ctype)) for e in node.expressions]
            return self.atom(name, ctype, points, negated)
        raise PredicateError(f"unsupported {_describe(node)}: {node.sql()!r} (a condition "
                             "compares a column with constants, combined by AND, OR, NOT)")

    def column(self, node: exp.Expression, context: exp.Expression | None = None
               ) -> tuple[str, str]:
        if not isinstance(node, exp.Column):
            where = (context or node).sql()
            raise PredicateError(f"expected a column in {where!r}, got {node.sql()!r}")
        if node.table:
            raise PredicateError(f"column {node.sql()!r} must not be qualified")
        name = node.name
        if name not in self.columns:
            known = ", ".join(sorted(self.columns))
            raise PredicateError(f"unknown column {name!r} (columns: {known})")
        return name, self.columns[name]

    def constant(self, node: exp.Expression, name: str, ctype: str) -> Any:
        """The constant ``node`` as a value of column ``name``'s type."""
        while isinstance(node, exp.Paren):
            node = node.this
        value = _literal(node)
        if value is _NOT_CONSTANT:
            if isinstance(node, exp.Column):
                self.column(node)  # an unknown column says so
            raise PredicateError(f"expected a constant to compare with column {name!r}, got "
                                 f"{node.sql()!r}")
        if value is None:
            raise PredicateError(f"compares column {name!r} with NULL, which is never true; "
                                 "use IS NULL or IS NOT NULL")
        return _coerce(value, name, ctype)

    def comparison(self, node: exp.Expression, negated: bool) -> Pred:
        op = _COMPARISONS[type(node)]
        left, right = node.this, node.expression
        if not isinstance(left, exp.Column):
            if isinstance(right, exp.Column) and _literal(left) is not _NOT_CONSTANT:
                left, right, op = right, left, _FLIPPED[op]
            elif isinstance(right, exp.Column):
                raise PredicateError(f"expected a column compared with a constant, got "
                                     f"{node.sql()!r}")
        if isinstance(left, exp.Column) and isinstance(right, exp.Column):
            self.column(left, node)  # an unknown one says so first
            self.column(right, node)
            raise PredicateError(f"compares two columns in {node.sql()!r}; only comparisons "
                                 "of a column with a constant are supported")
        name, ctype = self.column(left, node)
        c = self.constant(right, name, ctype)
        interval = {"=": point(c), "<>": point(c),
                    "<": Interval(None, True, c, False), "<=": Interval(None, True, c, True),
                    ">": Interval(c, False, None, True), ">=": Interval(c, True, None, True)
                    }[op]
        return self.atom(name, ctype, [interval], negated != (op == "<>"))

    def is_test(self, node: exp.Is, negated: bool) -> Pred:
        name, ctype = self.column(node.this, node)
        target = node.expression
        if isinstance(target, exp.Null):
            return in_set(name, ctype, FULL) if negated else is_null(name, ctype)
        if isinstance(target, exp.Boolean) and ctype == "bool":
            hit = in_set(name, ctype, (point(bool(target.this)),))
            # IS TRUE is two-valued: NOT (x IS TRUE) holds for NULL too
            miss = disjoin(is_null(name, ctype), in_set(name, ctype, (point(not target.this),)))
            return miss if negated else hit
        raise PredicateError(f"IS takes NULL (or TRUE/FALSE for a bool column), got "
                             f"{node.sql()!r}")

    @staticmethod
    def atom(name: str, ctype: str, intervals: list[Interval], negated: bool) -> Pred:
        values = _discretise(ctype, intervals)
        return in_set(name, ctype, complement(ctype, values) if negated else values)


def _chain(node: exp.Expression) -> list[exp.Expression]:
    """The operands of a chain of one connective (iteratively, so long chains do not recurse)."""
    kind, out, stack = type(node), [], [node]
    while stack:
        n = stack.pop()
        if type(n) is kind:
            stack.extend((n.expression, n.this))
        else:
            out.append(n)
    return out


_NOT_CONSTANT = object()


def _literal(node: exp.Expression) -> Any:
    """The Python value of a constant node (None for NULL), or ``_NOT_CONSTANT``."""
    sign = 1
    while isinstance(node, (exp.Neg, exp.Paren)):
        sign = -sign if isinstance(node, exp.Neg) else sign
        node = node.this
    if isinstance(node, exp.Null) and sign == 1:
        return None
    if isinstance(node, exp.Boolean) and sign == 1:
        return bool(node.this)
    if isinstance(node, exp.Cast) and node.to.is_type("timestamp", "timestamptz") \
            and isinstance(node.this, exp.Literal) and node.this.is_string and sign == 1:
        return _Timestamp(node.this.this)
    if not isinstance(node, exp.Literal):
        return _NOT_CONSTANT
    if node.is_string:
        return node.this if sign == 1 else _NOT_CONSTANT
    text = node.this
    try:
        number: int | float = int(text) if text.lstrip("-").isdigit() else float(text)
    except ValueError:
        return _NOT_CONSTANT
    return sign * number


class _Timestamp(str):
    """The text of ``TIMESTAMP '...'``."""


def _coerce(value: Any, name: str, ctype: str) -> Any:
    def mismatch() -> PredicateError:
        return PredicateError(f"compares {ctype} column {name!r} with "
                              f"{_kind_of(value)} {value!r}")

    if ctype in ("int", "double"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise mismatch()
        if isinstance(value, float) and not math.isfinite(value):
            raise PredicateError(f"constant {value!r} for column {name!r} is not finite")
        if ctype == "int" and not INT64_MIN <= value <= INT64_MAX:
            raise PredicateError(f"constant {value!r} is out of range for int column {name!r}")
        return float(value) + 0.0 if ctype == "double" else value
    if ctype == "bool":
        if not isinstance(value, bool):
            raise mismatch()
        return value
    if not isinstance(value, str):
        raise mismatch()
    if ctype == "string":
        if isinstance(value, _Timestamp):
            raise mismatch()
        return str(value)
    try:
        return timestamp_us(value)
    except (ValueError, OverflowError):
        raise PredicateError(f"constant {value!r} for timestamp column {name!r} is not an ISO "
                             "timestamp such as '2024-05-01 12:00:00' or "
                             "'2024-05-01T12:00:00+02:00'") from None


def _kind_of(value: Any) -> str:
    if isinstance(value, _Timestamp):
        return "timestamp"
    return {bool: "bool", int: "int", float: "double", str: "string"}.get(type(value),
                                                                          type(value).__name__)


def _discretise(ctype: str, intervals: list[Interval]) -> ValueSet:
    """Bounds of an int column given as doubles, moved to the integers they admit."""
    if ctype != "int":
        return normalise(ctype, intervals)
    fixed = []
    for iv in intervals:
        lo, lo_closed, hi, hi_closed = iv.lo, iv.lo_closed, iv.hi, iv.hi_closed
        if isinstance(lo, float):
            lo, lo_closed = (int(lo), lo_closed) if lo.is_integer() else (math.ceil(lo), True)
        if isinstance(hi, float):
            hi, hi_closed = (int(hi), hi_closed) if hi.is_integer() else (math.floor(hi), True)
        fixed.append(Interval(lo, lo_closed, hi, hi_closed))
    return normalise(ctype, fixed)


def _describe(node: exp.Expression) -> str:
    return {exp.Add: "arithmetic", exp.Sub: "arithmetic", exp.Mul: "arithmetic",
            exp.Div: "arithmetic", exp.Anonymous: "function call", exp.Select: "statement",
            exp.Literal: "bare constant"}.get(type(node), "expression")

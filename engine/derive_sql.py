"""The safe subset of Spark SQL allowed in a query's ``derive:`` expressions, checked with sqlglot.

A derived column's expression runs inside Spark, so anything Spark SQL can do it could do
(``java_method`` and ``reflect`` call any Java method). An expression is parsed with sqlglot
(dialect spark) and every node of the tree must be on the lists below; columns must be the
recording's (or ``__seq``, or a derived column defined before), unqualified; aggregate and
ranking functions only directly under ``OVER (...)``. Functions that are not deterministic
(``rand``, ``uuid``, ``current_timestamp``...) are not on the lists either.
"""

from __future__ import annotations

from collections.abc import Mapping

import sqlglot
import sqlglot.errors
from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify

#: Tree structure: columns, literals, casts, operators, CASE/IF, windows.
STRUCTURE: tuple[type[exp.Expression], ...] = (
    exp.Column, exp.Identifier, exp.Literal, exp.Null, exp.Boolean, exp.Paren, exp.DataType,
    exp.Cast, exp.TryCast, exp.Var, exp.Interval,
    exp.Neg, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.DPipe,
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.Is, exp.In,
    exp.Between, exp.Like, exp.ILike, exp.And, exp.Or, exp.Not,
    exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Nanvl,
    exp.Window, exp.WindowSpec, exp.Order, exp.Ordered,
)
#: Scalar functions: math, strings, timestamps.
FUNCTIONS: tuple[type[exp.Expression], ...] = (
    exp.Abs, exp.Ceil, exp.Floor, exp.Round, exp.Sqrt, exp.Cbrt, exp.Ln, exp.Log, exp.Exp,
    exp.Pow, exp.Sign, exp.Greatest, exp.Least,
    exp.Concat, exp.ConcatWs, exp.Upper, exp.Lower, exp.Length, exp.Substring, exp.Trim,
    exp.Pad, exp.Replace, exp.StrPosition, exp.Initcap, exp.Left, exp.Right, exp.Reverse,
    exp.TimeToStr, exp.TimeStrToTime, exp.TsOrDsToDate, exp.TimestampTrunc, exp.TsOrDsAdd,
    exp.DateDiff, exp.Hour, exp.Minute, exp.Second, exp.Day, exp.DayOfMonth, exp.DayOfWeek,
    exp.Month, exp.Year, exp.UnixMicros, exp.UnixSeconds,
)
#: Functions allowed only as the function of a window (``f(...) OVER (...)``).
WINDOW_FUNCTIONS: tuple[type[exp.Expression], ...] = (
    exp.Lag, exp.Lead, exp.RowNumber, exp.Rank, exp.DenseRank, exp.FirstValue, exp.LastValue,
    exp.Sum, exp.Min, exp.Max, exp.Count, exp.Avg, exp.Star,
)
#: Spark functions sqlglot does not model (it parses them as anonymous calls) that are allowed.
NAMED_FUNCTIONS = frozenset({"bround", "pmod", "isnull", "isnotnull", "timestamp_micros"})

_SPARK_TYPES = {"string": "string", "int": "bigint", "double": "double", "bool": "boolean",
                "timestamp": "timestamp"}
_STRING_TYPES = {exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR,
                 exp.DataType.Type.NCHAR, exp.DataType.Type.NVARCHAR}


def _node_problem(node: exp.Expression, columns: Mapping[str, str]) -> str | None:
    """Why ``node`` is outside the subset, or None."""
    if isinstance(node, exp.Anonymous):
        name = node.name.lower()
        return None if name in NAMED_FUNCTIONS else f"function {name}() is not allowed"
    if isinstance(node, (exp.Subquery, exp.Select, exp.Query)):
        return "subqueries are not allowed"
    if isinstance(node, WINDOW_FUNCTIONS):
        if isinstance(node, exp.Star) and isinstance(node.parent, exp.Count):
            return None
        if not isinstance(node.parent, exp.Window) or node.parent.this is not node:
            return f"{node.key}() is allowed only with OVER (...)"
        return None
    if isinstance(node, exp.Window) and node.args.get("alias"):
        return f"named window {node.args['alias'].sql('spark')} is not allowed: write OVER (...)"
    if isinstance(node, exp.Column):
        if node.table:
            return f"column {node.sql('spark')} must not be qualified"
        if node.name not in columns:
            return (f"unknown column {node.name!r} (known: "
                    f"{', '.join(sorted(columns))})")
        return None
    if not isinstance(node, STRUCTURE + FUNCTIONS):
        return f"{node.sql('spark')!r} ({node.key}) is not in the allowed subset"
    return None


def _string_typed(tree: exp.Expression, columns: Mapping[str, str]) -> bool:
    """True when sqlglot's type annotation gives the expression a string type."""
    schema = {"t": {c: _SPARK_TYPES.get(t, "string") for c, t in columns.items()}}
    try:
        select = qualify(exp.select(tree.copy().as_("d")).from_("t"), schema=schema,
                         dialect="spark", validate_qualify_columns=False)
        typed = annotate_types(select, schema=schema, dialect="spark").expressions[0]
    except sqlglot.errors.SqlglotError:
        return False
    return typed.type is not None and typed.type.this in _STRING_TYPES


def expression_problem(sql: str, declared: str, columns: Mapping[str, str]) -> str | None:
    """Why the ``derive:`` expression ``sql`` (declared of catalog type ``declared``, over
    ``columns``: name -> catalog type) is not accepted, or None when it is."""
    try:
        tree = sqlglot.parse_one(sql, read="spark")
        if tree is None:
            return "empty expression"
        for node in tree.walk():
            problem = _node_problem(node, columns)
            if problem:
                return problem
        if declared in ("int", "double", "bool") and _string_typed(tree, columns):
            return f"declared {declared} but the expression is a string (declare string or cast)"
    except sqlglot.errors.SqlglotError as exc:
        return f"not a Spark SQL expression: {(str(exc).splitlines() or [''])[0]}"
    except RecursionError:
        return "nested too deeply"
    return None

"""Derived columns computed per key in arrival order, without Spark (docs/guide/windows.md).

:func:`compile_derived` translates a query's ``derive:`` expressions (the Spark SQL subset of
:mod:`engine.derive_sql`, parsed with sqlglot) into a vectorised numpy evaluator when every
expression is within what can be computed key by key in arrival order: columns, literals,
arithmetic, comparisons, ``AND/OR/NOT``, ``IS [NOT] NULL``, ``BETWEEN``, ``IN``, ``CASE``/``if``,
``coalesce``/``nvl``/``ifnull``, ``nullif``, ``abs``, ``sqrt``, ``sign``, ``round``,
``greatest``, ``least``, exact casts, and ``lag(x[, n[, default]])``, ``row_number``, ``rank``,
``dense_rank`` and the running ``count``, ``sum``, ``avg``, ``min``, ``max``, ``first_value``,
``last_value`` over ``(PARTITION BY <key> ORDER BY __seq)`` (or ``ORDER BY <column>, __seq``
when that column never decreases within a key in arrival order: :attr:`DerivedProgram.sorted_by`
names the columns whose order the caller must check). Anything else (``lead``, other
partitions or orders, frames other than the running one, string and time functions, functions
whose last bit differs between the JVM and C such as ``exp``) returns the reason, and the caller
keeps Spark SQL. :meth:`DerivedProgram.step` is a stateful step: the state after a batch holds
what the next batch needs per key (the last ``n`` values, running aggregates).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import sqlglot
from sqlglot import exp

from . import derive_values as dv
from .derive_values import Values
from .derive_windows import Groups, KeyState, lag, running

SEQ = "__seq"
Node = Callable[["_Env"], Values]


class Unsupported(Exception):
    """The expression needs Spark SQL (the message says what)."""


@dataclass(frozen=True)
class WindowTerm:
    """One ``f(...) OVER (...)`` of the expressions: its function, argument and options."""

    func: str
    arg: Node | None
    offset: int = 1
    default: Node | None = None


@dataclass(frozen=True)
class DerivedProgram:
    """The derived columns of a query as a vectorised, stateful per-key evaluator."""

    key: str
    columns: tuple[tuple[str, str, Node], ...]  # (name, declared type, expression)
    windows: tuple[WindowTerm, ...]
    reads: tuple[str, ...]  # input columns read
    sorted_by: tuple[str, ...]  # columns assumed non-decreasing per key in arrival order

    def init(self) -> list[KeyState]:
        return [KeyState() for _ in self.windows]

    def step(self, state: list[KeyState], events: pd.DataFrame
             ) -> tuple[dict[str, pd.Series], list[KeyState]]:
        """The derived columns of ``events`` (any keys, in arrival order), and the next state."""
        if events.empty:
            return {name: Values.constant(None, declared, 0).to_series(declared).set_axis(
                events.index) for name, declared, _ in self.columns}, state
        env = _Env(self, events, list(state))
        out = {}
        for name, declared, node in self.columns:
            values = node(env)
            env.derived[name] = values
            out[name] = values.to_series(declared).set_axis(events.index)
        return out, env.state


class _Env:
    """What the nodes of one step read: the batch's columns, its groups, the window states."""

    def __init__(self, program: DerivedProgram, events: pd.DataFrame, state: list[KeyState]):
        self.program, self.events, self.state = program, events, state
        self.n = len(events)
        self.derived: dict[str, Values] = {}
        self._groups: Groups | None = None

    @property
    def groups(self) -> Groups:
        if self._groups is None:
            self._groups = Groups.of(self.events[self.program.key])
        return self._groups


def compile_derived(derived: Mapping[str, tuple[str, str]], columns: Mapping[str, str],
                    key: str) -> DerivedProgram:
    """The evaluator of ``derived`` (name -> (Spark SQL, catalog type)) over input ``columns``
    (name -> catalog type) partitioned by ``key``; raises :class:`Unsupported` naming the first
    column and construct that needs Spark SQL."""
    compiler = _Compiler(dict(columns), key)
    out = []
    for name, (sql, declared) in derived.items():
        if declared not in ("int", "double", "bool"):
            raise Unsupported(f"{name}: {declared} columns are computed by Spark SQL")
        try:
            node, kind = compiler.node(sqlglot.parse_one(sql, read="spark"))
            node = compiler.cast(node, kind, declared)
        except Unsupported as exc:
            raise Unsupported(f"{name}: {exc}") from None
        except TypeError as exc:
            raise Unsupported(f"{name}: {exc}") from None
        compiler.kinds[name] = declared
        compiler.derived.add(name)
        out.append((name, declared, node))
    return DerivedProgram(key, tuple(out), tuple(compiler.windows), tuple(sorted(compiler.reads)),
                          tuple(sorted(compiler.sorted_by)))


def constant_value(sql: str, declared: str) -> tuple[object, str] | None:
    """(value, ``declared``) when ``sql`` is a literal of the declared catalog type (a string,
    integer, ``TRUE``/``FALSE``), so that the column is that value for every event (such as
    the constant key of ``key: none``); None otherwise."""
    e = sqlglot.parse_one(sql, read="spark")
    if isinstance(e, exp.Literal) and e.is_string and declared == "string":
        return e.this, declared
    if isinstance(e, exp.Literal) and e.this.isdigit() and declared == "int":
        return int(e.this), declared
    if isinstance(e, exp.Boolean) and declared == "bool":
        return bool(e.this), declared
    return None


_COMPARE = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_ARITH = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}
_RUNNING = {exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max",
            exp.Count: "count", exp.FirstValue: "first_value"}
_RANKS = (exp.RowNumber, exp.Rank, exp.DenseRank)


class _Compiler:
    def __init__(self, kinds: dict[str, str], key: str):
        self.kinds, self.key = kinds, key
        self.derived: set[str] = set()
        self.reads: set[str] = set()
        self.sorted_by: set[str] = set()
        self.windows: list[WindowTerm] = []

    def node(self, e: exp.Expression) -> tuple[Node, str]:
        """(evaluator, kind) of ``e``; kind is int, double, bool, string, decimal or null."""
        if isinstance(e, exp.Paren):
            return self.node(e.this)
        if isinstance(e, exp.Column):
            return self.column(e.name)
        if isinstance(e, exp.Literal):
            return self.literal(e)
        if isinstance(e, exp.Null):
            return (lambda env: Values.constant(None, "int", env.n)), "null"
        if isinstance(e, exp.Boolean):
            value = bool(e.this)
            return (lambda env: Values.constant(value, "bool", env.n)), "bool"
        if isinstance(e, exp.Neg):
            a, kind = self.numeric(e.this)
            return (lambda env: dv.negate(a(env))), kind
        if type(e) in _ARITH:
            return self.arithmetic(_ARITH[type(e)], e.this, e.expression)
        if type(e) in _COMPARE:
            return self.compare(_COMPARE[type(e)], e.this, e.expression)
        if isinstance(e, (exp.And, exp.Or)):
            a, b = self.boolean(e.this), self.boolean(e.expression)
            f = dv.logical_and if isinstance(e, exp.And) else dv.logical_or
            return (lambda env: f(a(env), b(env))), "bool"
        if isinstance(e, exp.Not):
            a = self.boolean(e.this)
            return (lambda env: dv.logical_not(a(env))), "bool"
        if isinstance(e, exp.Is) and isinstance(e.expression, exp.Null):
            a, _ = self.node(e.this)
            return (lambda env: dv.is_null(a(env))), "bool"
        if isinstance(e, exp.Between):
            low = exp.GTE(this=e.this, expression=e.args["low"])
            high = exp.LTE(this=e.this, expression=e.args["high"])
            return self.node(exp.And(this=low, expression=high))
        if isinstance(e, exp.In) and e.expressions and not e.args.get("query"):
            ors = [exp.EQ(this=e.this, expression=v) for v in e.expressions]
            tree = ors[0]
            for item in ors[1:]:
                tree = exp.Or(this=tree, expression=item)
            return self.node(tree)
        return self.function(e)

    def function(self, e: exp.Expression) -> tuple[Node, str]:
        if isinstance(e, exp.Case) and not e.this:
            return self.case([(i.this, i.args["true"]) for i in e.args["ifs"]],
                             e.args.get("default"))
        if isinstance(e, exp.If):
            return self.case([(e.this, e.args["true"])], e.args.get("false"))
        if isinstance(e, exp.Coalesce):
            return self.same_kind([e.this, *e.expressions], dv.coalesce)
        if isinstance(e, (exp.Greatest, exp.Least)):
            greatest = isinstance(e, exp.Greatest)
            return self.same_kind([e.this, *e.expressions],
                                  lambda items: dv.extreme(items, greatest))
        if isinstance(e, exp.Nullif):
            a, b = e.this, e.expression
            return self.case([(exp.EQ(this=a, expression=b), exp.Null())], a)
        if isinstance(e, exp.Abs):
            a, kind = self.numeric(e.this)
            return (lambda env: _map(a(env), abs_)), kind
        if isinstance(e, exp.Sqrt):
            a, _ = self.numeric(e.this)
            return (lambda env: _map(a(env).as_double(), np.sqrt)), "double"
        if isinstance(e, exp.Sign):
            a, _ = self.numeric(e.this)
            return (lambda env: _map(a(env).as_double(), sign_)), "double"
        if isinstance(e, exp.Round) and not e.args.get("truncate"):
            scale = self.int_literal(e.args.get("decimals"), 0)
            if scale < 0:
                raise Unsupported("round() to a negative scale")
            a, kind = self.numeric(e.this)
            return (lambda env: dv.spark_round(a(env), scale)), kind
        if isinstance(e, (exp.Cast, exp.TryCast)):
            a, kind = self.node(e.this)
            to = e.to.this
            target = {exp.DataType.Type.DOUBLE: "double", exp.DataType.Type.BIGINT: "int"}.get(to)
            if target is None:
                raise Unsupported(f"cast to {e.to.sql('spark')}")
            return self.cast(a, kind, target), target
        if isinstance(e, exp.Anonymous) and e.name.lower() in ("isnull", "isnotnull"):
            a, _ = self.node(e.expressions[0])
            negated = e.name.lower() == "isnotnull"
            return (lambda env: _not_if(dv.is_null(a(env)), negated)), "bool"
        if isinstance(e, exp.Anonymous) and e.name.lower() == "pmod" and len(e.expressions) == 2:
            x, y = e.expressions
            rem, kind = self.arithmetic("%", x, y)
            divisor, dkind = self.node(y)
            divisor = self.cast(divisor, dkind, kind)
            return (lambda env: _positive_mod(rem(env), divisor(env))), kind
        if isinstance(e, exp.Window):
            return self.window(e)
        raise Unsupported(f"{e.sql('spark')!r} is computed by Spark SQL")

    def column(self, name: str) -> tuple[Node, str]:
        if name in self.derived:
            return (lambda env: env.derived[name]), self.kinds[name]
        kind = "int" if name == SEQ else self.kinds[name]
        if kind not in ("int", "double", "bool", "string"):
            raise Unsupported(f"column {name} of type {kind}")
        self.reads.add(name)
        return (lambda env: Values.of_series(env.events[name], kind)), kind

    def literal(self, e: exp.Literal) -> tuple[Node, str]:
        text = e.this
        if e.is_string:
            return (lambda env: Values.constant(text, "string", env.n)), "string"
        if text.isdigit():
            value = int(text)
            return (lambda env: Values.constant(value, "int", env.n)), "int"
        number = float(text)
        # Spark reads 1.5 as a decimal (exact with ints, a double next to a double), 1e3 as a
        # double
        kind = "double" if "e" in text.lower() else "decimal"
        return (lambda env: Values.constant(number, "double", env.n)), kind

    def numeric(self, e: exp.Expression) -> tuple[Node, str]:
        node, kind = self.node(e)
        if kind not in ("int", "double"):
            raise Unsupported(f"{e.sql('spark')!r} ({kind}) where a number is expected")
        return node, kind

    def boolean(self, e: exp.Expression) -> Node:
        node, kind = self.node(e)
        if kind == "null":
            return lambda env: Values.constant(None, "bool", env.n)
        if kind != "bool":
            raise Unsupported(f"{e.sql('spark')!r} ({kind}) where a condition is expected")
        return node

    def int_literal(self, e: exp.Expression | None, default: int) -> int:
        if e is None:
            return default
        if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal):
            return -self.int_literal(e.this, default)
        if isinstance(e, exp.Literal) and not e.is_string and e.this.isdigit():
            return int(e.this)
        raise Unsupported(f"{e.sql('spark')!r} where an integer literal is expected")

    @staticmethod
    def common(kinds: list[str]) -> str:
        """The kind several operands meet in (a decimal literal only next to doubles)."""
        known = {k for k in kinds if k != "null"}
        if "decimal" in known:
            if known - {"decimal", "double"} or "double" not in known:
                raise Unsupported("a decimal literal outside double arithmetic (write 1.5e0 "
                                  "or cast)")
            known.discard("decimal")
        if known == {"int", "double"}:
            return "double"
        if len(known) > 1:
            raise Unsupported(f"operands of kinds {', '.join(sorted(known))}")
        return known.pop() if known else "null"

    def arithmetic(self, op: str, x: exp.Expression, y: exp.Expression) -> tuple[Node, str]:
        (a, ka), (b, kb) = self.node(x), self.node(y)
        kind = self.common([ka, kb])
        if kind not in ("int", "double", "null"):
            raise Unsupported(f"{op} on {kind}")
        kind = "double" if op == "/" else ("int" if kind == "null" else kind)
        a, b = self.cast(a, ka, kind), self.cast(b, kb, kind)
        return (lambda env: dv.arithmetic(op, a(env), b(env))), kind

    def compare(self, op: str, x: exp.Expression, y: exp.Expression) -> tuple[Node, str]:
        (a, ka), (b, kb) = self.node(x), self.node(y)
        kind = self.common([ka, kb])
        if kind == "string" and op not in ("=", "<>"):
            raise Unsupported(f"string comparison {op}")
        kind = "int" if kind == "null" else kind
        a, b = self.cast(a, ka, kind), self.cast(b, kb, kind)
        return (lambda env: dv.compare(op, a(env), b(env))), "bool"

    def same_kind(self, items: list[exp.Expression], f: Callable[[list[Values]], Values]
                  ) -> tuple[Node, str]:
        nodes = [self.node(i) for i in items]
        kind = self.common([k for _, k in nodes])
        casts = [self.cast(n, k, kind) for n, k in nodes]
        return (lambda env: f([c(env) for c in casts])), kind

    def case(self, branches: list[tuple[exp.Expression, exp.Expression]],
             other: exp.Expression | None) -> tuple[Node, str]:
        conds = [self.boolean(c) for c, _ in branches]
        values = [self.node(v) for _, v in branches] + [
            self.node(other if other is not None else exp.Null())]
        kind = self.common([k for _, k in values])
        casts = [self.cast(n, k, kind) for n, k in values]

        def run(env: _Env) -> Values:
            out = casts[-1](env)
            for cond, value in zip(reversed(conds), reversed(casts[:-1]), strict=True):
                out = dv.choose(cond(env), value(env), out)
            return out

        return run, kind

    def cast(self, node: Node, kind: str, to: str) -> Node:
        """``node`` (of ``kind``) as ``to`` where Spark's cast cannot fail or round."""
        if kind == to or to == "null":
            return node
        if kind == "null":
            return lambda env: Values.constant(None, to, env.n)
        if to == "double" and kind in ("int", "decimal", "bool"):
            return lambda env: node(env).as_double()
        raise Unsupported(f"a {kind} value as {to}")

    def window(self, e: exp.Window) -> tuple[Node, str]:
        if e.args.get("alias") or len(e.args.get("partition_by") or []) != 1:
            raise Unsupported("a window not partitioned by the key alone")
        part = e.args["partition_by"][0]
        if not isinstance(part, exp.Column) or part.name != self.key:
            raise Unsupported(f"a window partitioned by {part.sql('spark')}, not the key "
                              f"{self.key}")
        order = e.args.get("order")
        ordered = order.expressions if order else []
        names = [o.this.name if isinstance(o.this, exp.Column) and not o.args.get("desc")
                 else None for o in ordered]
        if not names or names[-1] != SEQ or len(names) > 2 or None in names or (
                len(names) == 2 and (names[0] in self.derived or names[0] == SEQ)):
            raise Unsupported("a window not ordered by arrival (ORDER BY __seq, or a column "
                              "then __seq)")
        self.sorted_by.update(names[:-1])
        self.reads.update(names[:-1])
        spec, f = e.args.get("spec"), e.this
        running_frame = spec is None or (
            spec.args.get("kind") in ("ROWS", "RANGE", "rows", "range")
            and str(spec.args.get("start")).upper() == "UNBOUNDED"
            and str(spec.args.get("start_side")).upper() == "PRECEDING"
            and str(spec.args.get("end")).upper() == "CURRENT ROW")
        if not running_frame or (spec is not None and isinstance(f, (exp.Lag, *_RANKS))):
            raise Unsupported("a window frame other than the running one")
        if isinstance(f, exp.Lag):
            offset = self.int_literal(f.args.get("offset"), 1)
            if not 0 <= offset <= 1000:
                raise Unsupported("lag() by a negative or large offset")
            arg, akind = self.node(f.this)
            default, dkind = self.node(f.args["default"]) if f.args.get("default") else (
                None, "null")
            kind = self.common([akind, dkind])
            kind = "int" if kind == "null" else kind
            arg = self.cast(arg, akind, kind)
            if default is not None:
                default = self.cast(default, dkind, kind)
            term = WindowTerm("lag", arg, offset, default)
        elif isinstance(f, _RANKS):  # arrival order has no ties
            term, kind = WindowTerm("count", None), "int"
        elif isinstance(f, exp.LastValue) and not f.args.get("ignore_nulls"):
            return self.node(f.this)  # the running frame ends at the current row
        elif type(f) in _RUNNING:
            star = isinstance(f, exp.Count) and (isinstance(f.this, exp.Star) or (
                isinstance(f.this, exp.Literal) and not f.this.is_string))
            arg, kind = (None, "int") if star else self.node(f.this)
            if kind not in ("int", "double") and not (star or isinstance(f, exp.Count)):
                raise Unsupported(f"{f.key}() of a {kind}")
            func = _RUNNING[type(f)]
            kind = {"count": "int", "avg": "double"}.get(func, kind)
            term = WindowTerm(func, arg)
        else:
            raise Unsupported(f"{f.key}() OVER (...) is computed by Spark SQL")
        return self.add_window(term), kind

    def add_window(self, term: WindowTerm) -> Node:
        i = len(self.windows)
        self.windows.append(term)

        def run(env: _Env) -> Values:
            x = term.arg(env) if term.arg else None
            if term.func == "lag":
                default = term.default(env) if term.default else Values.constant(
                    None, x.kind, env.n)
                out, env.state[i] = lag(x, env.groups, env.state[i], term.offset, default)
            else:
                out, env.state[i] = running(term.func, x, env.groups, env.state[i])
            return out

        return run


def _map(values: Values, f: Callable[[np.ndarray], np.ndarray]) -> Values:
    with np.errstate(all="ignore"):
        return Values(f(values.data), values.valid, values.kind)


def _positive_mod(rem: Values, divisor: Values) -> Values:
    """Spark's ``pmod``: the remainder moved into the divisor's sign range."""
    with np.errstate(all="ignore"):
        fixed = np.where(rem.data < 0, np.fmod(rem.data + divisor.data,
                                               np.where(rem.valid, divisor.data, 1)), rem.data)
    return Values(fixed, rem.valid, rem.kind)


def _not_if(values: Values, negated: bool) -> Values:
    return dv.logical_not(values) if negated else values


def abs_(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "i" and (x == np.iinfo("int64").min).any():
        raise dv.DeriveError("integer overflow in abs() (Spark SQL's ANSI mode fails too)")
    return np.abs(x)


def sign_(x: np.ndarray) -> np.ndarray:
    """Spark's ``sign``: -1.0, 1.0, or the argument itself for zeros and NaN."""
    return np.where((x == 0) | np.isnan(x), x, np.sign(x))

"""Predicates and operations: named operations, lambdas of the expression language, callables.

Every predicate and operation carries a stable ``key`` (its identity for rate keys and state
snapshots). Partial application ``(op a)`` is data: the same operation with ``bound`` values.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..expr.lexer import TokenStream, tokenize
from ..expr.values import UNIT
from .errors import EvaluationError, QRESyntaxError, QRETypeError
from .expr import Expr, lambda_body, parse_item_expr
from .types import ANY, BOOL, NUM, UNIT_T, Type, join, show
from .values import Failure

#: What a failing predicate or operation raises (anything else is a bug and propagates).
EVALUATION_ERRORS = (ArithmeticError, TypeError, ValueError, IndexError)

_callable_ids: dict[int, tuple[object, int]] = {}
_counter = itertools.count()


def _callable_key(fn: object) -> str:
    """A stable key for a Python callable (same object -> same key within the process)."""
    entry = _callable_ids.setdefault(id(fn), (fn, next(_counter)))
    name = getattr(fn, "__qualname__", type(fn).__name__)
    return f"{name}#{entry[1]}"


@dataclass(frozen=True)
class Pred:
    """A predicate on items: an expression (introspectable) or an opaque callable."""

    key: str
    fn: Callable[[Any], Any] = field(compare=False, repr=False)
    fields: frozenset[str] = field(default=frozenset(), compare=False)

    def __call__(self, item: Any) -> bool:
        """Whether ``item`` satisfies the predicate; :class:`EvaluationError` if it cannot be
        evaluated on it."""
        try:
            return bool(self.fn(item))
        except EVALUATION_ERRORS as exc:
            raise EvaluationError(f"the predicate {self.key!r} cannot be evaluated: "
                                  f"{type(exc).__name__}: {exc}") from None

    @property
    def expr(self) -> Expr | None:
        return self.fn if isinstance(self.fn, Expr) else None


def as_pred(pred: str | Callable[[Any], Any] | Pred) -> Pred:
    """Turn an expression string or a callable into a ``Pred``; rejects non-boolean exprs."""
    if isinstance(pred, Pred):
        return pred
    if isinstance(pred, str):
        return pred_from_expr(parse_item_expr(pred))
    if callable(pred):
        return Pred(_callable_key(pred), pred)
    raise QRETypeError(f"a predicate must be a string or a callable, got {pred!r}")


def pred_from_expr(expr: Expr) -> Pred:
    """A predicate from a parsed item expression, which must be boolean."""
    kind = expr.result_type()
    if join(kind, BOOL) is None:
        raise QRETypeError(f"predicate {expr.text()!r} has type {show(kind)}, not bool")
    return Pred(expr.text(), expr, expr.fields)


def item_op_from_expr(expr: Expr) -> Op:
    """An atom operation from a parsed item expression."""
    return Op(expr.text(), 1, expr, (), expr.fields)


def _add(a: Any, b: Any) -> Any:
    return a + b


def _sub(a: Any, b: Any) -> Any:
    return a - b


def _mul(a: Any, b: Any) -> Any:
    return a * b


def _div(a: Any, b: Any) -> Any:
    return a / b


def _avg(a: Any, b: Any) -> Any:
    return (a + b) / 2


def _pi1(a: Any, b: Any) -> Any:
    return a


def _pi2(a: Any, b: Any) -> Any:
    return b


def _pair(a: Any, b: Any) -> Any:
    return (a, b)


def _ident(a: Any) -> Any:
    return a


def _to_unit(a: Any) -> Any:
    return UNIT


def _numeric(name: str) -> Callable[[tuple[Type, ...]], Type]:
    def check(args: tuple[Type, ...]) -> Type:
        for i, arg in enumerate(args):
            if join(arg, NUM) is None:
                raise QRETypeError(f"operation {name!r} expects numbers but argument {i + 1} "
                                   f"has type {show(arg)}")
        return NUM
    return check


NAMED: dict[str, tuple[int, Callable[..., Any], Callable[[tuple[Type, ...]], Type]]] = {
    "+": (2, _add, _numeric("+")),
    "-": (2, _sub, _numeric("-")),
    "*": (2, _mul, _numeric("*")),
    "/": (2, _div, _numeric("/")),
    "max": (2, max, _numeric("max")),
    "min": (2, min, _numeric("min")),
    "avg": (2, _avg, _numeric("avg")),
    "pi1": (2, _pi1, lambda t: t[0]),
    "pi2": (2, _pi2, lambda t: t[1]),
    "pair": (2, _pair, lambda t: (t[0], t[1])),
    "id": (1, _ident, lambda t: t[0]),
    "unit": (1, _to_unit, lambda t: UNIT_T),
}


@dataclass(frozen=True)
class Op:
    """An operation of ``arity`` arguments (after the ``bound`` ones, for partial application)."""

    key: str
    arity: int
    fn: Callable[..., Any] = field(compare=False, repr=False)
    bound: tuple[Any, ...] = ()
    fields: frozenset[str] = field(default=frozenset(), compare=False)

    def __call__(self, *args: Any) -> Any:
        """The result; a :class:`Failure` if an argument is one or the operation raises."""
        for arg in (*self.bound, *args):
            if isinstance(arg, Failure):
                return arg
        try:
            return self.fn(*self.bound, *args)
        except EVALUATION_ERRORS as exc:
            return Failure(f"the operation {str(self)!r} failed: {type(exc).__name__}: {exc}")

    def partial(self, value: Any) -> Op:
        """``(op value)``: fix the first remaining argument."""
        return Op(self.key, self.arity - 1, self.fn, (*self.bound, value), self.fields)

    def result_type(self, args: tuple[Type, ...]) -> Type:
        """Type of the result for argument types ``args``; raises QRETypeError."""
        if len(args) != self.arity:
            raise QRETypeError(f"operation {self.key!r} takes {self.arity} argument(s), "
                               f"used with {len(args)}")
        if self.key in NAMED:
            return NAMED[self.key][2](args)
        if isinstance(self.fn, Expr):
            return self.fn.result_type(args)
        return ANY

    def __str__(self) -> str:
        base = self.fn.text() if isinstance(self.fn, Expr) and self.key not in NAMED else self.key
        return f"({base} {' '.join(map(repr, self.bound))})" if self.bound else base


def named_op(name: str) -> Op:
    arity, fn, _ = NAMED[name]
    return Op(name, arity, fn)


def op_from_stream(stream: TokenStream, env: dict[str, Op] | None = None) -> Op:
    """Parse an operation: a named op, a let-bound op name, or a lambda ``(a, b) -> expr``."""
    tok = stream.peek()
    if tok.kind in ("sym", "name") and tok.text in NAMED and not stream.at("->", 1):
        stream.next()
        return named_op(tok.text)
    if tok.kind == "name" and env and tok.text in env and not stream.at("->", 1):
        stream.next()
        return env[tok.text]
    if tok.kind == "name" and stream.at("->", 1):
        params: tuple[str, ...] = (stream.next().text,)
    elif stream.at("("):
        stream.next()
        names = [_param(stream)]
        while stream.accept(","):
            names.append(_param(stream))
        stream.expect(")")
        params = tuple(names)
        if len(set(params)) != len(params):
            stream.fail("duplicate lambda parameter", tok)
    else:
        stream.fail("expected an operation (a named operation or a lambda such as "
                    "'(a, b) -> a + b')")
    stream.expect("->")
    body = lambda_body(stream, params)
    return Op(body.text(), len(params), body)


def _param(stream: TokenStream) -> str:
    tok = stream.next()
    if tok.kind != "name":
        stream.fail("expected a parameter name", tok)
    return tok.text


def as_op(op: str | Callable[..., Any] | Op, arity: int) -> Op:
    """Turn a named op, lambda text or callable into an ``Op`` taking ``arity`` arguments."""
    if isinstance(op, str):
        stream = TokenStream(tokenize(op, QRESyntaxError), QRESyntaxError)
        result = op_from_stream(stream)
        if stream.peek().kind != "eof":
            stream.fail("unexpected text after operation")
    elif isinstance(op, Op):
        result = op
    elif callable(op):
        result = Op(_callable_key(op), _callable_arity(op, arity), op)
    else:
        raise QRETypeError(f"an operation must be a string or a callable, got {op!r}")
    if result.arity != arity:
        raise QRETypeError(f"operation {result.key!r} takes {result.arity} argument(s) but "
                           f"{arity} are needed here")
    return result


def _callable_arity(fn: Callable[..., Any], default: int) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return default
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params):
        return default
    return sum(1 for p in params if p.kind in kinds and p.default is inspect.Parameter.empty)


def as_item_op(op: str | Callable[[Any], Any] | Op) -> Op:
    """An atom's operation: an item expression string or a callable on the item."""
    if isinstance(op, Op):
        return op
    if isinstance(op, str):
        return item_op_from_expr(parse_item_expr(op))
    if callable(op):
        return Op(_callable_key(op), 1, op)
    raise QRETypeError(f"an atom operation must be a string or a callable, got {op!r}")

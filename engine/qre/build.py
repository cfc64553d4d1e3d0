"""The public combinators: build terms, type-check them and reject ill-formed ones.

A query is at most :data:`~engine.qre.terms.MAX_DEPTH` constructs deep (each ``|`` of a chain of
choices is one); deeper is a ``QRETypeError``, so no evaluator or check can exceed Python's
recursion limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import QRETypeError
from .ops import Op, Pred, as_item_op, as_op, as_pred
from .terms import (
    Apply,
    Atom,
    Bottom,
    Combine,
    Eps,
    Iter,
    Split,
    Term,
    check_terms,
    typed,
)
from .types import ANY, Type, join, show, type_of

PredLike = str | Callable[[Any], Any] | Pred
OpLike = str | Callable[..., Any] | Op


def _op_type(op: Op, args: tuple[Type | None, ...], where: str) -> Type:
    try:
        return op.result_type(tuple(ANY if a is None else a for a in args))
    except QRETypeError as err:
        raise QRETypeError(f"{err} in {where}") from None


def bottom() -> Term:
    """The query that is undefined on every stream."""
    return typed(Bottom(), ANY)


def eps(c: Any) -> Term:
    """Maps the empty stream to ``c``."""
    return typed(Eps(c), type_of(c))


def atom(pred: PredLike, op: OpLike) -> Term:
    """Matches one item ``d`` with ``pred(d)`` and outputs ``op(d)``."""
    term = Atom(as_pred(pred), as_item_op(op))
    return typed(term, _op_type(term.op, (ANY,), str(term)))


def split(f: Term, g: Term, op: OpLike) -> Term:
    """``w = u v`` maps to ``op(f(u), g(v))``."""
    return _binary(Split, f, g, op)


def iterate(init: Term, body: Term, op: OpLike) -> Term:
    """``w = u v1..vn``: fold ``op`` over ``body(vi)`` from ``init(u)``; body must reject ε."""
    check_terms(init, body)
    fn = as_op(op, 2)
    where = f"iter({init}, {body}, {fn})"
    if body.outs:
        raise QRETypeError(f"the body {body} of {where} matches the empty stream "
                           f"(it outputs {list(body.outs)!r} on it); an iteration body must not")
    result = _op_type(fn, (init.type, body.type), where)
    kind = join(result, init.type or ANY)
    if kind is None:
        raise QRETypeError(f"in {where}: the fold operation returns {show(result)} but the "
                           f"accumulator {init} has type {show(init.type or ANY)}")
    return typed(Iter(init, body, fn), kind)


def apply(f: Term, op: OpLike) -> Term:
    """Post-processes the output: ``op(f(w))``."""
    check_terms(f)
    fn = as_op(op, 1)
    kind = _op_type(fn, (f.type,), f"apply({f}, {fn})")
    return typed(Apply(f, fn), kind)


def combine(f: Term, g: Term, op: OpLike) -> Term:
    """Runs ``f`` and ``g`` on the same stream: ``op(f(w), g(w))``."""
    return _binary(Combine, f, g, op)


def _binary(cls: type[Split] | type[Combine], f: Term, g: Term, op: OpLike) -> Term:
    """Build and type a split or combine of ``f`` and ``g`` joined by ``op``."""
    check_terms(f, g)
    fn = as_op(op, 2)
    kind = _op_type(fn, (f.type, g.type), f"{cls.name}({f}, {g}, {fn})")
    return typed(cls(f, g, fn), kind)

"""Derived forms, each defined by its expansion into the core combinators."""

from __future__ import annotations

from ..expr.values import UNIT
from .build import OpLike, PredLike, atom, combine, eps, iterate, split
from .terms import Term


def any_items() -> Term:
    """Any stream, output unit: ``iter(eps(unit), atom(true, unit), pi1)``."""
    return iterate(eps(UNIT), atom("true", "unit"), "pi1")


def plus(pred: PredLike, value: OpLike, op: OpLike) -> Term:
    """A non-empty run of items satisfying ``pred``, folded with ``op``:
    ``iter(atom(pred, value), atom(pred, value), op)``."""
    return iterate(atom(pred, value), atom(pred, value), op)


def count(pred: PredLike) -> Term:
    """Number of items of a (possibly empty) run satisfying ``pred``:
    ``iter(eps(0), atom(pred, 1), +)``."""
    return iterate(eps(0), atom(pred, "1"), "+")


def total(pred: PredLike, value: OpLike) -> Term:
    """Sum of ``value`` over a (possibly empty) run satisfying ``pred``:
    ``iter(eps(0), atom(pred, value), +)``."""
    return iterate(eps(0), atom(pred, value), "+")


def average(pred: PredLike, value: OpLike) -> Term:
    """Average of ``value`` over a non-empty run satisfying ``pred``:
    ``combine(plus(pred, value, +), plus(pred, 1, +), /)``."""
    return combine(plus(pred, value, "+"), plus(pred, "1", "+"), "/")


def suffix(q: Term) -> Term:
    """``q`` on some suffix of the stream: ``split(any, q, pi2)`` (ambiguous unless the rate of
    ``q`` pins the cut point)."""
    return split(any_items(), q, "pi2")

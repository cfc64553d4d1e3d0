"""A small structural type lattice for query outputs: num, bool, str, unit, tuples, any."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Union

from ..expr.values import UNIT

Type = Union[str, tuple["Type", ...]]  # noqa: UP007 -- recursive alias
ANY: Type = "any"
NUM: Type = "num"
BOOL: Type = "bool"
STR: Type = "str"
UNIT_T: Type = "unit"


def type_of(value: Any) -> Type:
    """The type of a constant."""
    if value is UNIT:
        return UNIT_T
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int | float | Fraction):
        return NUM
    if isinstance(value, str):
        return STR
    if isinstance(value, tuple):
        return tuple(type_of(v) for v in value)
    return ANY


def join(a: Type, b: Type) -> Type | None:
    """The common type of ``a`` and ``b`` (``any`` absorbs), or None if incompatible."""
    if a == ANY:
        return b
    if b == ANY or a == b:
        return a
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        parts = [join(x, y) for x, y in zip(a, b, strict=True)]
        return None if any(p is None for p in parts) else tuple(parts)  # type: ignore[misc]
    return None


def show(t: Type) -> str:
    """Human-readable type."""
    if isinstance(t, tuple):
        return "(" + ", ".join(show(x) for x in t) + ")"
    return t

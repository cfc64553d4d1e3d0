"""Row values of the executor: a total order over them, and the type check of each column."""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from .model import OTHER, Query

_STR_TYPES = {"string", "str", "varchar", "text", "char"}
_FLOAT_TYPES = {"float", "double", "real", "decimal", "numeric"}
_BOOL_TYPES = {"bool", "boolean"}
#: What a value of each kind must be, as worded in error messages.
EXPECTED = {"int": "an integer", "str": "a string", "float": "a finite number",
            "bool": "a boolean", "scalar": "a string, boolean or finite number"}


def order(v: Any) -> tuple:
    """A total order over the values a row can hold (None < booleans < numbers < strings)."""
    if v is None:
        return (0, 0)
    if isinstance(v, bool):
        return (1, int(v))
    if isinstance(v, int | float | Fraction):
        return (2, v)
    return (3, str(v))


def order_key(values: Iterable[Any]) -> tuple:
    """The sort key of a row of values under :func:`order`."""
    return tuple(order(v) for v in values)


def fits(kind: str, v: Any) -> bool:
    """Whether the non-NULL value ``v`` is of ``kind`` (a key of :data:`EXPECTED`)."""
    finite = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    if kind == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == "str":
        return isinstance(v, str)
    if kind == "float":
        return finite
    if kind == "bool":
        return isinstance(v, bool)
    return finite or isinstance(v, str | bool)


def value_kind(query: Query, stream: str, col: str, declared: str) -> str:
    """The kind of value ``stream.col`` holds: integers (and timestamps) or its declared type."""
    if query.types[stream][col] != OTHER:
        return "int"
    t = declared.lower()
    return ("str" if t in _STR_TYPES else "float" if t in _FLOAT_TYPES
            else "bool" if t in _BOOL_TYPES else "scalar")

"""Typed constants and canonical value sets: the sets of non-null values a column may take.

A value set is a sorted tuple of disjoint, non-touching :class:`Interval` s. Discrete types
(``int``, ``timestamp`` in microseconds, ``bool``) only use closed bounds, so every set has
exactly one representation; ``double`` and ``string`` keep open and closed bounds. ``None`` as a
bound means unbounded. The full set (every non-null value) is ``(Interval(None, True, None,
True),)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

COLUMN_TYPES = ("int", "double", "string", "bool", "timestamp")
DISCRETE = ("int", "timestamp", "bool")
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Interval:
    """The values between ``lo`` and ``hi`` (``None``: unbounded), ends included when closed."""

    lo: Any
    lo_closed: bool
    hi: Any
    hi_closed: bool

    def contains(self, value: Any) -> bool:
        if self.lo is not None and (value < self.lo or (value == self.lo and not self.lo_closed)):
            return False
        return self.hi is None or value < self.hi or (value == self.hi and self.hi_closed)

    @property
    def is_point(self) -> bool:
        return self.lo is not None and self.lo == self.hi


ValueSet = tuple[Interval, ...]
FULL: ValueSet = (Interval(None, True, None, True),)
EMPTY: ValueSet = ()


def point(value: Any) -> Interval:
    return Interval(value, True, value, True)


def timestamp_us(text: str) -> int:
    """An ISO-8601 timestamp (naive means UTC) in microseconds since the epoch."""
    moment = datetime.fromisoformat(text.strip())
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1)


def timestamp_text(us: int) -> str:
    """The ISO-8601 text of a microsecond timestamp, which :func:`timestamp_us` reads back."""
    return (_EPOCH + timedelta(microseconds=us)).isoformat(sep=" ")


def _succ(ctype: str, value: Any) -> Any:
    return True if ctype == "bool" else value + 1


def _pred(ctype: str, value: Any) -> Any:
    return False if ctype == "bool" else value - 1


def _lo_key(iv: Interval) -> tuple:
    return (0,) if iv.lo is None else (1, iv.lo, 0 if iv.lo_closed else 1)


def _is_empty(iv: Interval) -> bool:
    if iv.lo is None or iv.hi is None:
        return False
    return iv.lo > iv.hi or (iv.lo == iv.hi and not (iv.lo_closed and iv.hi_closed))


def _close(ctype: str, iv: Interval) -> Interval | None:
    """``iv`` with closed bounds for a discrete type (clipped to the domain for bool), or None
    when it holds no value."""
    if ctype not in DISCRETE:
        return None if _is_empty(iv) else iv
    lo, hi = iv.lo, iv.hi
    if ctype == "bool":
        lo = False if lo is None else lo
        hi = True if hi is None else hi
        if (lo is True and not iv.lo_closed) or (hi is False and not iv.hi_closed):
            return None
    if lo is not None and not iv.lo_closed:
        lo = _succ(ctype, lo)
    if hi is not None and not iv.hi_closed:
        hi = _pred(ctype, hi)
    if lo is not None and hi is not None and lo > hi:
        return None
    if ctype == "bool" and lo is False and hi is True:
        lo = hi = None
    return Interval(lo, True, hi, True)


def _touch(ctype: str, a: Interval, b: Interval) -> bool:
    """Whether ``b`` (starting at or after ``a``'s start) overlaps or touches ``a``."""
    if a.hi is None or b.lo is None:
        return True
    if ctype in DISCRETE:
        return b.lo <= _succ(ctype, a.hi) if a.hi is not True else True
    return a.hi > b.lo or (a.hi == b.lo and (a.hi_closed or b.lo_closed))


def _max_hi(a: Interval, b: Interval) -> tuple[Any, bool]:
    if a.hi is None or b.hi is None:
        return None, True
    if a.hi != b.hi:
        return (a.hi, a.hi_closed) if a.hi > b.hi else (b.hi, b.hi_closed)
    return a.hi, a.hi_closed or b.hi_closed


def normalise(ctype: str, intervals: list[Interval] | ValueSet) -> ValueSet:
    """The canonical value set of the union of ``intervals``."""
    closed = sorted((c for iv in intervals if (c := _close(ctype, iv)) is not None),
                    key=_lo_key)
    merged: list[Interval] = []
    for iv in closed:
        if merged and _touch(ctype, merged[-1], iv):
            last = merged[-1]
            hi, hi_closed = _max_hi(last, iv)
            merged[-1] = Interval(last.lo, last.lo_closed, hi, hi_closed)
        else:
            merged.append(iv)
    result = tuple(merged)
    if ctype == "bool" and result == (point(False), point(True)):
        return FULL
    return result


def union(ctype: str, a: ValueSet, b: ValueSet) -> ValueSet:
    return normalise(ctype, [*a, *b])


def _intersect_one(a: Interval, b: Interval) -> Interval:
    if a.lo is None or (b.lo is not None and (b.lo, not b.lo_closed) > (a.lo, not a.lo_closed)):
        lo, lo_closed = b.lo, b.lo_closed
    else:
        lo, lo_closed = a.lo, a.lo_closed
    if a.hi is None or (b.hi is not None and (b.hi, b.hi_closed) < (a.hi, a.hi_closed)):
        hi, hi_closed = b.hi, b.hi_closed
    else:
        hi, hi_closed = a.hi, a.hi_closed
    return Interval(lo, lo_closed, hi, hi_closed)


def intersect(ctype: str, a: ValueSet, b: ValueSet) -> ValueSet:
    return normalise(ctype, [_intersect_one(x, y) for x in a for y in b])


def complement(ctype: str, a: ValueSet) -> ValueSet:
    """The non-null values outside ``a``."""
    gaps: list[Interval] = []
    lo, lo_closed = None, True
    for iv in a:
        if iv.lo is not None:
            gaps.append(Interval(lo, lo_closed, iv.lo, not iv.lo_closed))
        if iv.hi is None:
            return normalise(ctype, gaps)
        lo, lo_closed = iv.hi, not iv.hi_closed
    gaps.append(Interval(lo, lo_closed, None, True))
    return normalise(ctype, gaps)


def subset(ctype: str, a: ValueSet, b: ValueSet) -> bool:
    return intersect(ctype, a, b) == a


def contains(values: ValueSet, value: Any) -> bool:
    return any(iv.contains(value) for iv in values)

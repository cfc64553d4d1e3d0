"""The aggregate algebra of the executor: partial states, merging them, and final values."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .values import order


def median(counts: dict[Any, int]) -> Fraction | None:
    """The median of a value -> count multiset, as ``statistics.median`` over Fractions."""
    n = sum(counts.values())
    if not n:
        return None
    want, found, seen = ((n - 1) // 2, n // 2), [], 0
    for v in sorted(counts):
        seen += counts[v]
        while len(found) < 2 and want[len(found)] < seen:
            found.append(v)
    return Fraction(found[0] + found[1], 2)


@dataclass(frozen=True)
class AggOp:
    """One aggregate: its function and where its argument sits (occurrence, tuple position).

    Partial states: ``COUNT(*)`` an int; ``COUNT(x)``/``SUM``/``AVG`` ``[sum, non-null count]``;
    ``MIN``/``MAX`` the extreme value or None; ``COUNT(DISTINCT)``/``MEDIAN`` value -> count.
    """

    func: str
    occ: int | None
    pos: int | None

    @property
    def kind(self) -> str:
        """``star`` (COUNT(*)), ``sum``, ``ext`` (MIN/MAX) or ``map`` (value -> count)."""
        if self.occ is None:
            return "star"
        if self.func in ("COUNT", "SUM", "AVG"):
            return "sum"
        return "ext" if self.func in ("MIN", "MAX") else "map"

    def empty(self) -> Any:
        """The partial state of no tuples."""
        if self.kind == "star":
            return 0
        if self.kind == "sum":
            return [0, 0]
        return None if self.kind == "ext" else {}

    def part(self, v: Any, n: int) -> Any:
        """The partial state of ``n`` tuples whose argument is ``v``."""
        if self.kind == "sum":
            return [0, 0] if v is None else [0 if self.func == "COUNT" else v * n, n]
        if self.kind == "ext":
            return v
        return {} if v is None else {v: n}

    def merge(self, acc: Any, part: Any, scale: int, distinct: bool) -> Any:
        """Fold ``scale`` copies of ``part`` into ``acc`` (maps and lists in place)."""
        if self.kind == "sum":
            acc[0] += part[0] * scale
            acc[1] += part[1] * scale
            return acc
        if self.kind == "ext":
            if part is None or acc is None:
                return acc if part is None else part
            return min(acc, part) if self.func == "MIN" else max(acc, part)
        for v, c in part.items():
            acc[v] = 1 if distinct else acc.get(v, 0) + c * scale
        return acc

    def fold(self, parts: dict[int, Any], k: int, v: Any) -> bool:
        """Fold one argument value into ``parts[k]`` as a set (duplicates count once); True
        if the partial state changed."""
        old = parts.get(k, self.empty())
        mark = len(old) if self.kind == "map" else old  # maps are updated in place
        new = parts[k] = self.merge(old, self.part(v, 1), 1, True)
        return mark != (len(new) if self.kind == "map" else new)

    def final(self, acc: Any) -> Any:
        """The aggregate's value from its partial state."""
        if self.kind in ("star", "ext"):
            return acc
        if self.func == "COUNT":
            return acc[1]
        if self.func == "SUM":
            return acc[0] if acc[1] else None
        if self.func == "AVG":
            return Fraction(acc[0], acc[1]) if acc[1] else None
        return len(acc) if self.func == "COUNT_DISTINCT" else median(acc)

    def extra(self, acc: Any) -> int:
        """Stored entries beyond the one holding ``acc`` (the value -> count pairs)."""
        return len(acc) if self.kind == "map" else 0

    def encode(self, acc: Any) -> Any:
        """``acc`` as JSON-ready lists (maps as value-sorted pairs)."""
        if self.kind == "map":
            return sorted(([v, c] for v, c in acc.items()), key=lambda p: order(p[0]))
        return list(acc) if self.kind == "sum" else acc

    def decode(self, data: Any) -> Any:
        """The partial state :meth:`encode` wrote."""
        if self.kind == "map":
            return {v: c for v, c in data}
        return list(data) if self.kind == "sum" else data

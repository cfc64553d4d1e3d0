"""The executor's state: stored tuples or bucket synopses, the emitted set, the group map."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .aggregates import AggOp


class Entry:
    """A stored tuple with its count (full history), or a bucket's representative, count and
    partial aggregates (``parts``: aggregate index -> partial state; None when ``rep`` is exact)."""

    __slots__ = ("count", "parts", "rep")

    def __init__(self, rep: tuple, count: int, parts: dict[int, Any] | None):
        self.rep, self.count, self.parts = rep, count, parts


class Store:
    """Entries by key, with hash indexes on the tuple positions that equality joins look up."""

    __slots__ = ("entries", "index")

    def __init__(self, index_keys: Iterable[tuple[int, ...]] = ()):
        self.entries: dict[Any, Entry] = {}
        self.index: dict[tuple[int, ...], dict[tuple, list[Entry]]] = {k: {} for k in index_keys}

    def add(self, key: Any, entry: Entry) -> None:
        """Store ``entry`` under ``key`` and index it."""
        self.entries[key] = entry
        for pos, idx in self.index.items():
            idx.setdefault(tuple(entry.rep[p] for p in pos), []).append(entry)

    def find(self, pos: tuple[int, ...], values: tuple) -> Iterable[Entry]:
        """The entries whose positions ``pos`` hold ``values`` (``pos`` must be indexed)."""
        return self.index[pos].get(values, ())


@dataclass
class Bucket:
    """A set-semantics bucket: representatives by role (max/min/first) and partial aggregates."""

    roles: dict[str, tuple] = field(default_factory=dict)
    parts: dict[int, Any] = field(default_factory=dict)


@dataclass
class SpjState:
    """Executor state (mutable; ``SpjExecutor.encode`` gives its canonical bytes).

    ``stores``: per occurrence, bag buckets (synopsis) or the distinct stored tuples with counts
    (full history, an index over ``rows``); ``rows``: full history, every stored tuple per
    occurrence in arrival order; ``reps``: set synopses per occurrence and bucket; ``emitted``:
    the result rows seen so far (set semantics); ``groups``: group key -> partial aggregates.
    """

    stores: list[Store]
    rows: list[list[tuple]]
    reps: list[dict[tuple, Bucket]]
    emitted: set[tuple] = field(default_factory=set)
    groups: dict[tuple, list] = field(default_factory=dict)


def parts_extra(aggs: Sequence[AggOp], parts: dict[int, Any] | None) -> int:
    """Stored value -> count pairs of a bucket's partial aggregates."""
    return sum(aggs[k].extra(x) for k, x in (parts or {}).items())


def size(state: SpjState, aggs: Sequence[AggOp], full_history: bool) -> int:
    """Stored entries: tuples (full history) or buckets/representatives, emitted rows, groups
    and value -> count pairs of holistic aggregates."""
    total = len(state.emitted) + sum(1 + sum(a.extra(x) for a, x in zip(aggs, acc, strict=True))
                                     for acc in state.groups.values())
    if full_history:
        return total + sum(len(r) for r in state.rows)
    for store in state.stores:
        total += sum(1 + parts_extra(aggs, e.parts) for e in store.entries.values())
    for buckets in state.reps:
        total += sum(len(b.roles) + parts_extra(aggs, b.parts) for b in buckets.values())
    return total

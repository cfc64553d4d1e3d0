"""Output sinks: they receive a batch's joined combinations and build its output increment.

A combination is the join environment (one value per attribute slot), the entry chosen per
occurrence and its multiplicity (how many result tuples it stands for).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .aggregates import AggOp
from .model import Attr, Const, Query
from .state import Entry
from .values import order_key


def expand(values: tuple, consts: tuple[tuple[int, Const], ...]) -> tuple:
    """An output row: the projected ``values`` with each constant SELECT item at its position."""
    if not consts:
        return values
    row = list(values)
    for k, c in consts:
        row.insert(k, c.value)
    return tuple(row)


class Sink:
    """Receives the joined combinations of a batch and builds the output increment.

    ``prunes``: the join walk may stop early once :meth:`known` says the projection was seen."""

    prunes = False

    def known(self, env: list) -> bool:
        """Whether the combination's output is already known (set semantics)."""
        return False

    def add(self, env: list, chosen: Sequence[Entry | None], mult: int) -> None:
        """Take one combination standing for ``mult`` result tuples."""
        raise NotImplementedError

    def rows(self) -> list[dict]:
        """The batch's output increment, sorted by value."""
        raise NotImplementedError


class BagSink(Sink):
    """Bag SPJ: a count of new result tuples per projected value (``consts``: the constant
    SELECT items by output position)."""

    def __init__(self, columns: Sequence[str], proj_slots: tuple[int, ...],
                 consts: tuple[tuple[int, Const], ...] = ()):
        self.columns, self.proj_slots, self.consts = list(columns), proj_slots, consts
        self.out: Counter = Counter()

    def add(self, env: list, chosen: Sequence[Entry | None], mult: int) -> None:
        self.out[tuple(env[s] for s in self.proj_slots)] += mult

    def rows(self) -> list[dict]:
        return [dict(zip(self.columns, (*expand(p, self.consts), n), strict=True))
                for p, n in sorted(self.out.items(), key=lambda x: order_key(x[0]))]


class SetSink(Sink):
    """Set SPJ: every projected row not in ``emitted``; :meth:`rows` adds them to it. Without
    projected attributes the one empty row says whether any result exists."""

    prunes = True

    def __init__(self, columns: Sequence[str], proj_slots: tuple[int, ...], emitted: set[tuple],
                 consts: tuple[tuple[int, Const], ...] = ()):
        self.columns, self.proj_slots, self.emitted = list(columns), proj_slots, emitted
        self.consts = consts
        self.found: set[tuple] = set()

    def known(self, env: list) -> bool:
        p = tuple(env[s] for s in self.proj_slots)
        return p in self.emitted or p in self.found

    def add(self, env: list, chosen: Sequence[Entry | None], mult: int) -> None:
        if not self.known(env):
            self.found.add(tuple(env[s] for s in self.proj_slots))

    def rows(self) -> list[dict]:
        self.emitted |= self.found
        return [dict(zip(self.columns, expand(p, self.consts), strict=True))
                for p in sorted(self.found, key=order_key)]


class AggSink(Sink):
    """Folds combinations into the group map; remembers each touched group's values before.

    ``distinct``: partial aggregates are set-semantics ones (duplicates count once)."""

    def __init__(self, query: Query, columns: Sequence[str], group_slots: tuple[int, ...],
                 aggs: Sequence[AggOp], groups: dict[tuple, list], distinct: bool):
        self.query, self.columns, self.group_slots = query, list(columns), group_slots
        self.aggs, self.groups, self.distinct = aggs, groups, distinct
        self.before: dict[tuple, tuple | None] = {}
        if not group_slots and () not in self.groups:
            self._touch(())

    def _touch(self, g: tuple) -> list:
        acc = self.groups.get(g)
        if g not in self.before:
            self.before[g] = None if acc is None else self._values(acc)
        if acc is None:
            acc = self.groups[g] = [a.empty() for a in self.aggs]
        return acc

    def _values(self, acc: list) -> tuple:
        return tuple(a.final(x) for a, x in zip(self.aggs, acc, strict=True))

    def add(self, env: list, chosen: Sequence[Entry | None], mult: int) -> None:
        acc = self._touch(tuple(env[s] for s in self.group_slots))
        for k, a in enumerate(self.aggs):
            if a.occ is None:
                acc[k] += mult
                continue
            e = chosen[a.occ]
            part = e.parts[k] if e.parts is not None else a.part(e.rep[a.pos], e.count)
            acc[k] = a.merge(acc[k], part, mult // e.count, self.distinct)

    def rows(self) -> list[dict]:
        out = []
        for g in sorted(self.before, key=order_key):
            values = self._values(self.groups[g])
            if values == self.before[g]:
                continue
            by_group, aggs = dict(zip(self.query.group_by, g, strict=True)), iter(values)
            row = [by_group[o] if isinstance(o, Attr) else o.value if isinstance(o, Const)
                   else next(aggs) for o in self.query.output]
            out.append(dict(zip(self.columns, row, strict=True)))
        return out

"""Compiling an analysed query for the executor: tuple layouts, filters, bucket keys, join plans.

A :class:`Plan` is built once per executor and only read afterwards. Each occurrence of the query
stores tuples of its used attributes (``cols``); while joining, every attribute has a *slot* in
one environment list, and a :class:`JoinStep` binds one more occurrence into it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .aggregates import AggOp
from .closure import INF, Closure
from .lto import Spj
from .model import DUP_INSENSITIVE, OTHER, Aggregate, Atom, Attr, Query

Row = Mapping[str, Any]
Event = tuple[str, Row]
COUNTED, REPS = "counted", "reps"


@dataclass(frozen=True)
class Filter:
    """``Filt(S_i)``: the closure's bounds and differences on one occurrence's attributes."""

    sat: bool
    notnull: tuple[int, ...] = ()
    bounds: tuple[tuple[int, float, float], ...] = ()
    diffs: tuple[tuple[int, int, float], ...] = ()
    eqs: tuple[tuple[int, int], ...] = ()

    def passes(self, t: tuple) -> bool:
        """Whether tuple ``t`` satisfies every filter (no NULL in a compared position)."""
        if not self.sat:
            return False
        for p in self.notnull:
            if t[p] is None:
                return False
        for p, lo, hi in self.bounds:
            if not lo <= t[p] <= hi:
                return False
        for p, q, w in self.diffs:
            if t[p] - t[q] > w:
                return False
        return all(t[p] == t[q] for p, q in self.eqs)


@dataclass(frozen=True)
class JoinStep:
    """Bind occurrence ``occ`` in a join: look up ``key`` positions by the ``src`` slots' values,
    bind ``(slot, position)`` pairs, then check the cross-occurrence atoms now complete."""

    occ: int
    key: tuple[int, ...]
    src: tuple[int, ...]
    bind: tuple[tuple[int, int], ...]
    checks: tuple[Callable[[list], bool], ...]


def _compile_atom(atom: Atom, slot: dict[Attr, int]) -> Callable[[list], bool]:
    i, j = slot[atom.left], slot[atom.right]
    if atom.op == "<":
        return lambda e: e[i] < e[j]
    if atom.op == "<=":
        return lambda e: e[i] <= e[j]
    return lambda e: e[i] == e[j]


def _occs_of(atom: Atom) -> set[str]:
    return {t.occ for t in (atom.left, atom.right) if isinstance(t, Attr)}


def coord(v: Any, consts: tuple[int, ...]) -> int:
    """The §7 range of an integer: ``kmin - 1`` (below), the value itself, ``kmax + 1`` (above)."""
    if not consts:
        return 0
    return consts[0] - 1 if v < consts[0] else consts[-1] + 1 if v > consts[-1] else v


def make_filter(cl: Closure, cols: Sequence[Attr], compared: set[Attr],
                isint: Sequence[bool]) -> Filter:
    """``Filt`` of one occurrence with attributes ``cols`` (``compared``: attributes in some
    predicate, which may not be NULL; ``isint``: which columns are integers)."""
    if not cl.sat:
        return Filter(False)
    used = [p for p, a in enumerate(cols) if a in compared]
    ints = [p for p in used if isint[p]]
    lo = {p: cl.lower(cols[p]) for p in ints}
    hi = {p: cl.upper(cols[p]) for p in ints}
    bounds = tuple((p, lo[p], hi[p]) for p in ints if lo[p] > -INF or hi[p] < INF)
    diffs = tuple((p, q, w) for p in ints for q in ints
                  if p != q and (w := cl.ub(cols[p], cols[q])) < hi[p] - lo[q])
    eqs = tuple((p, q) for p in used for q in used if p < q and not isint[p]
                and not isint[q] and cl.eq(cols[p], cols[q]))
    return Filter(True, tuple(used), bounds, diffs, eqs)


class Plan:
    """The compiled query (read-only after construction).

    ``bucketed``: tuples are grouped by bucket (synopsis mode over several occurrences);
    ``path``: ``"reps"`` (set representatives) or ``"counted"`` (bag buckets or full history);
    ``keep``: whether stores persist between batches. Per occurrence ``i``: ``cols[i]`` its
    stored attributes, ``filters[i]``, ``keys[i]`` the ``(position, is_int)`` pairs of its bucket
    key, ``starts[i]`` the slots its tuple binds, ``joins[i]`` the join steps from it,
    ``ready[i]`` how many steps bind the projection, ``lookups[i]`` its indexed positions.
    """

    def __init__(self, query: Query, spj: Spj, cl: Closure, kind: str, full_history: bool):
        self.query, self.closure, self.spj, self.occs = query, cl, spj, tuple(spj.occs)
        n = len(self.occs)
        sensitive = any(a.func not in DUP_INSENSITIVE for a in query.aggregates)
        self.bucketed = not full_history and n > 1
        reps = kind == "set" or (kind == "agg" and not sensitive)
        self.path = REPS if self.bucketed and reps else COUNTED
        self.keep = full_history or self.bucketed
        self.cols = [spj.occs[o] for o in self.occs]
        self._isint = [tuple(query.type_of(a) != OTHER for a in cols) for cols in self.cols]
        self.by_stream: dict[str, list[int]] = {}
        for i, o in enumerate(self.occs):
            self.by_stream.setdefault(query.occurrences[o], []).append(i)
        self.slot = {a: s for s, a in enumerate(a for cols in self.cols for a in cols)}
        self._atom_attrs = {t for at in spj.atoms for t in (at.left, at.right)
                            if isinstance(t, Attr)}
        self.consts = spj.constants
        self.proj_slots = tuple(self.slot[a] for a in spj.proj)
        self.group_slots = tuple(self.slot[a] for a in query.group_by)
        self.aggs = [self._agg(a) for a in query.aggregates]
        self.agg_on = [[(k, g) for k, g in enumerate(self.aggs) if g.occ == i] for i in range(n)]
        keyed = self._atom_attrs | set(spj.proj) | set(query.group_by)
        self.keys = [tuple((p, self._isint[i][p]) for p, a in enumerate(cols) if a in keyed)
                     for i, cols in enumerate(self.cols)]
        self.filters = [self._filter(i) for i in range(n)]
        self.starts = [tuple((self.slot[a], p) for p, a in enumerate(c)) for c in self.cols]
        self.joins = [self._plan(i) for i in range(n)]
        self.ready = [self._proj_ready(i) for i in range(n)]
        lookups: list[set[tuple[int, ...]]] = [set() for _ in range(n)]
        for plan in self.joins:
            for st in plan:
                if st.key:
                    lookups[st.occ].add(st.key)
        self.lookups = [tuple(sorted(k)) for k in lookups]

    # -- per batch -------------------------------------------------------------------------------
    def tuples(self, batch: Sequence[Event]) -> Iterable[tuple[int, tuple]]:
        """(occurrence, tuple) for every row that passes the occurrence's filters."""
        for stream, row in batch:
            for i in self.by_stream.get(stream, ()):
                t = tuple(row[a.name] for a in self.cols[i])
                if self.filters[i].passes(t):
                    yield i, t

    def bucket(self, i: int, t: tuple) -> tuple:
        """The bucket of occurrence ``i``'s tuple ``t`` (§7 range of each keyed integer)."""
        return tuple(coord(t[p], self.consts) if isint else 0 for p, isint in self.keys[i])

    # -- compilation -----------------------------------------------------------------------------
    def _agg(self, agg: Aggregate) -> AggOp:
        if agg.arg is None:
            return AggOp(agg.func, None, None)
        i = self.occs.index(agg.arg.occ)
        return AggOp(agg.func, i, self.cols[i].index(agg.arg))

    def _filter(self, i: int) -> Filter:
        return make_filter(self.closure, self.cols[i], self._atom_attrs, self._isint[i])

    def _links(self, j: int, bound: list[int]) -> list[tuple[int, int]]:
        """(position in ``j``, slot of a bound attribute) pairs that must be equal."""
        cl, out = self.closure, []
        if not cl.sat:
            return out
        for p, a in enumerate(self.cols[j]):
            if a not in self._atom_attrs or (self.bucketed and not cl.bounded(a)):
                continue
            src = next((b for i in bound for b in self.cols[i]
                        if b in self._atom_attrs and cl.eq(a, b)), None)
            if src is not None:
                out.append((p, self.slot[src]))
        return out

    def _plan(self, start: int) -> tuple[JoinStep, ...]:
        """Join order from ``start``: greedily the occurrence with the most equality links."""
        bound, steps = [start], []
        rest = [j for j in range(len(self.occs)) if j != start]
        while rest:
            j = max(rest, key=lambda r: (len(self._links(r, bound)), -r))
            links = self._links(j, bound)
            names = {self.occs[i] for i in (*bound, j)}
            checks = tuple(_compile_atom(at, self.slot) for at in self.spj.atoms
                           if self.occs[j] in _occs_of(at) and len(_occs_of(at)) > 1
                           and _occs_of(at) <= names)
            steps.append(JoinStep(j, tuple(p for p, _ in links), tuple(s for _, s in links),
                                  self.starts[j], checks))
            bound.append(j)
            rest.remove(j)
        return tuple(steps)

    def _proj_ready(self, start: int) -> int:
        """How many join steps bind every projected attribute (set pruning starts there)."""
        need = {self.occs.index(a.occ) for a in self.spj.proj} - {start}
        for k, st in enumerate(self.joins[start]):
            if not need:
                return k
            need.discard(st.occ)
        return len(self.joins[start])

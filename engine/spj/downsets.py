"""Application time: the timestamp order of the streams, its down-sets, and rule E-b for sets.

Streams whose timestamps are equal in P+ are merged into one stream (their tuples of one step
join at that step); ``S`` is *earlier* than ``T`` when ``ts(S) < ts(T)`` is in P+. A *down-set*
is a set of (merged) streams closed under "earlier": the down-set engine of
``design/spj-application-time.md`` §4.4 keeps, per proper down-set D, the embeddings of D among
the past tuples, keyed by D's interface attributes (those joined with streams outside D).

Rule E-b (set semantics) accepts a query when its projected attributes and equality joins are
bounded (Arasu C1, C2 on the merged streams) and, for every proper down-set D, the unbounded
interface attributes of D form one equivalence class compared with the other streams in one
direction only: the state of D then needs one extreme value per bounded key. The condition on D
is Arasu's set C3 for D merged into one stream against the rest merged into another, so Fig. 2
decides it, and the brute force over derived LTO queries (:func:`eb_findings` with
``exact=True``) is its reference.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .checker import check
from .closure import Closure
from .lto import Finding, Spj, brute_force
from .model import TIMESTAMP, Atom, Attr, Query, Term
from .synopsis import Synopsis, buckets

DOWN, REST = "D", "R"


@dataclass(frozen=True)
class TimeOrder:
    """``groups``: occurrence -> merged stream; ``earlier``: merged stream -> the merged
    streams strictly earlier than it; ``closure``: the timestamp closure (``sat`` false if the
    timestamp predicates are contradictory)."""

    groups: dict[str, str]
    earlier: dict[str, frozenset[str]]
    closure: Closure

    @property
    def streams(self) -> list[str]:
        return list(dict.fromkeys(self.groups.values()))

    def down_sets(self) -> list[frozenset[str]]:
        """The proper non-empty down-sets, smallest first."""
        streams, out = self.streams, []
        for k in range(1, len(streams)):
            for d in itertools.combinations(streams, k):
                if all(self.earlier[g] <= set(d) for g in d):
                    out.append(frozenset(d))
        return out

    def greatest(self) -> str | None:
        """The merged stream later than every other one, if there is one."""
        return next((g for g in self.streams if all(
            h in self.earlier[g] for h in self.streams if h != g)), None)


def time_order(query: Query) -> TimeOrder:
    """Merge streams with equal timestamps (step 2 of the notes) and order the rest."""
    ts = {o: Attr(o, query.timestamps[s]) for o, s in query.occurrences.items()
          if s in query.timestamps}
    ts_atoms = [a for a in query.atoms if any(
        isinstance(t, Attr) and query.type_of(t) == TIMESTAMP for t in (a.left, a.right))]
    cl = Closure(list(ts.values()), [*ts_atoms, *(Atom(-1, "<", t) for t in ts.values())])
    groups: dict[str, str] = {}
    for o in query.occurrences:
        same = [p for p in query.occurrences if o in ts and p in ts and cl.sat
                and cl.eq(ts[o], ts[p])]
        groups[o] = "+".join(same) if same else o
    earlier: dict[str, set[str]] = {g: set() for g in groups.values()}
    if cl.sat:
        for o, p in itertools.permutations(ts, 2):
            if cl.lt(ts[p], ts[o]):
                earlier[groups[o]].add(groups[p])
    return TimeOrder(groups, {g: frozenset(e) for g, e in earlier.items()}, cl)


def rename(spj: Spj, to: Callable[[Attr], Attr]) -> Spj:
    """``spj`` with every attribute renamed by ``to`` (streams are the new ``occ`` values)."""
    def term(t: Term) -> Term:
        return to(t) if isinstance(t, Attr) else t

    occs: dict[str, tuple[Attr, ...]] = {}
    for a in spj.attrs:
        b = to(a)
        occs[b.occ] = (*occs.get(b.occ, ()), b)
    atoms = tuple(Atom(term(a.left), a.op, term(a.right)) for a in spj.atoms)
    return Spj(occs, tuple(to(a) for a in spj.proj), atoms, spj.bag)


def merged(spj: Spj, groups: Mapping[str, str]) -> Spj:
    """``spj`` over the merged streams: ``S.A`` of a merged ``S+T`` becomes ``S+T.S.A``."""
    return rename(spj, lambda a: a if groups[a.occ] == a.occ else
                  Attr(groups[a.occ], str(a)))


def split(spj: Spj, down: frozenset[str]) -> Spj:
    """``spj`` as two streams: the down-set ``D`` and the rest ``R`` (names keep the stream)."""
    return rename(spj, lambda a: Attr(DOWN if a.occ in down else REST, str(a)))


def _on_down(f: Finding) -> bool:
    return f.condition == "C3" and any(r.attr.occ == DOWN for r in f.refs)


def _c1_c2(f: Finding) -> bool:
    return f.condition in ("C1", "C2")


def eb_findings(m: Spj, order: TimeOrder, exact: bool = False
                ) -> list[tuple[Finding, frozenset[str] | None]]:
    """Why rule E-b rejects the merged set query ``m`` (empty: accepted), with the down-set
    each finding is about. ``exact``: the brute force over derived LTO queries, else Fig. 2."""
    found = brute_force(m, _c1_c2) if exact else check(m, m.closure(), _c1_c2)
    if found:
        return [(f, None) for f in found]
    for d in order.down_sets():
        md = split(m, d)
        if DOWN not in md.occs or REST not in md.occs:
            continue
        found = brute_force(md, _on_down) if exact else check(md, md.closure(), _on_down)
        if found:
            return [(found[-1], d)]
    return []


def interface(spj: Spj, cl: Closure, d: frozenset[str],
              groups: Mapping[str, str] | None = None) -> list[Attr]:
    """Attributes of ``d``'s streams that are projected or compared with a stream outside
    (``groups``: occurrence -> merged stream, when ``spj`` is not merged)."""
    def stream(a: Attr) -> str:
        return groups[a.occ] if groups is not None else a.occ

    out = []
    for a in spj.attrs:
        if stream(a) in d and (a in spj.proj or any(
                stream(b) not in d and (cl.le(a, b) or cl.le(b, a)) for b in spj.attrs)):
            out.append(a)
    return out


def downset_synopsis(m: Spj, cl: Closure, order: TimeOrder) -> Synopsis:
    """Per proper down-set: per §7 bucket of its interface attributes, a representative and a
    count (bag) or the extreme representatives of the unbounded class (set)."""
    emitted = 0
    if not m.bag:
        emitted = math.prod(int(cl.upper(a) - cl.lower(a) + 1) for a in m.proj) * len(m.proj) \
            if m.proj else 1
    layout, units = {}, emitted
    for d in order.down_sets():
        keyed = interface(m, cl, d)
        nb = math.prod(buckets(cl, a, m.constants) for a in keyed)
        layout["{" + ", ".join(sorted(d)) + "}"] = {
            "key": [str(a) for a in keyed], "buckets": nb,
            "entry": "(representative, count)" if m.bag else "t_max / t_min representatives"}
        units += nb * (len(keyed) + 1 if m.bag else max(2 * len(keyed), 1))
    note = "down-set synopses" + ("" if m.bag else f" plus an emitted set of ≤ {emitted} units")
    return Synopsis(layout, units, note)

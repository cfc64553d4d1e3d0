"""Derived LTO queries, MaxRef/MinRef, Theorems 5.6/5.10 and the brute-force LTO check."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from .closure import Closure
from .model import Atom, Attr, Query


@dataclass(frozen=True)
class Spj:
    """``Π_L σ_P(occ_1 × … × occ_n)`` restricted to the attributes that matter."""

    occs: dict[str, tuple[Attr, ...]]
    proj: tuple[Attr, ...]
    atoms: tuple[Atom, ...]
    bag: bool

    @property
    def attrs(self) -> tuple[Attr, ...]:
        return tuple(a for attrs in self.occs.values() for a in attrs)

    @property
    def constants(self) -> tuple[int, ...]:
        return tuple(sorted({t for a in self.atoms for t in (a.left, a.right)
                             if isinstance(t, int)}))

    def closure(self) -> Closure:
        return Closure(self.attrs, self.atoms)


@dataclass(frozen=True)
class Ref:
    """``attr`` (unbounded) is in MaxRef or MinRef of its stream through a join with ``partner``."""

    attr: Attr
    role: str  # "max" (partner < attr) or "min" (attr < partner)
    partner: Attr


@dataclass(frozen=True)
class Finding:
    """A violated condition of Theorem 5.6/5.10 in one derived LTO query."""

    condition: str
    attrs: tuple[Attr, ...]
    explanation: str
    closure: Closure | None = field(default=None, compare=False, repr=False)
    refs: tuple[Ref, ...] = ()


def redundant(cl: Closure, x: Attr, y: Attr, attrs: tuple[Attr, ...],
              consts: tuple[int, ...]) -> bool:
    """Def 4.1 for the join ``x <(=) y``: separated by an intermediate element."""
    for k in consts:
        if (cl.lt(x, k) and cl.lt(k, y)) or (cl.eq(x, k) and cl.lt(k, y)) or \
                (cl.lt(x, k) and cl.eq(y, k)):
            return True
    return any(cl.le(x, e) and cl.le(e, y) and not cl.eq(x, e) and not cl.eq(e, y)
               for e in attrs)


def refs(spj: Spj, cl: Closure) -> list[Ref]:
    """All MaxRef/MinRef memberships (Def 5.4) over the nonredundant joins in P+."""
    attrs, consts, out = spj.attrs, spj.constants, []
    for x, y in itertools.permutations(attrs, 2):
        if x.occ == y.occ or not cl.le(x, y) or cl.eq(x, y):
            continue
        bx, by = cl.bounded(x), cl.bounded(y)
        if (bx and by) or redundant(cl, x, y, attrs, consts):
            continue
        if not bx:
            out.append(Ref(x, "min", y))
        if not by:
            out.append(Ref(y, "max", x))
    return out


def c1_c2(spj: Spj, cl: Closure) -> list[Finding]:
    """C1 (projected attributes bounded) and C2 (cross-stream equalities bounded)."""
    found = [Finding("C1", (a,), f"projected attribute {a} is unbounded", cl)
             for a in spj.proj if not cl.bounded(a)]
    for x, y in itertools.combinations(spj.attrs, 2):
        if x.occ != y.occ and cl.eq(x, y) and not cl.bounded(x):
            found.append(Finding("C2", (x, y), f"equality join {x} = {y} on unbounded "
                                 "attributes", cl))
    return found


def _join(r: Ref) -> str:
    return f"{r.attr} < {r.partner}" if r.role == "min" else f"{r.partner} < {r.attr}"


def c3(spj: Spj, cl: Closure) -> list[Finding]:
    """C3: no Refs (bag); at most one Ref class per stream (set)."""
    all_refs = refs(spj, cl)
    if spj.bag:
        return [Finding("C3", (r.attr, r.partner), f"nonredundant inequality join {_join(r)} "
                        f"with unbounded {r.attr}", cl, (r,)) for r in all_refs[:1]]
    found = []
    for occ in spj.occs:
        mine = [r for r in all_refs if r.attr.occ == occ]
        mx = [r.attr for r in mine if r.role == "max"]
        mn = [r.attr for r in mine if r.role == "min"]
        if cl.classes(mx) + cl.classes(mn) > 1:
            names = ", ".join(sorted({str(r.attr) for r in mine}))
            found.append(Finding(
                "C3", tuple(sorted({r.attr for r in mine} | {r.partner for r in mine})),
                f"stream {occ} has {cl.classes(mx)} MaxRef and {cl.classes(mn)} MinRef "
                f"classes ({names}); set semantics allows one", cl, tuple(mine)))
    return found


def lto_conditions(spj: Spj, cl: Closure) -> list[Finding]:
    """Theorem 5.6 (bag) or 5.10 (set) on one LTO query."""
    if spj.bag and len(spj.occs) == 1:
        return []
    return c1_c2(spj, cl) + c3(spj, cl)


def _weak_orders(items: tuple[Attr, ...]) -> Iterator[list[tuple[Attr, ...]]]:
    if not items:
        yield []
        return
    first = items[0]
    for wo in _weak_orders(items[1:]):
        for i in range(len(wo)):
            yield [*wo[:i], (first, *wo[i]), *wo[i + 1:]]
        for i in range(len(wo) + 1):
            yield [*wo[:i], (first,), *wo[i:]]


def stream_orders(attrs: tuple[Attr, ...], consts: tuple[int, ...]) -> Iterator[list[Atom]]:
    """Filter sets that totally order ``attrs`` with ``consts`` (slots, weak orders)."""
    m = len(consts)
    for slots in itertools.product(range(2 * m + 1), repeat=len(attrs)):
        fixed: list[Atom] = []
        groups: dict[int, tuple[Attr, ...]] = {}
        for a, s in zip(attrs, slots, strict=True):
            if s % 2:
                fixed.append(Atom(a, "=", consts[s // 2]))
                continue
            j = s // 2
            if j > 0:
                fixed.append(Atom(consts[j - 1], "<", a))
            if j < m:
                fixed.append(Atom(a, "<", consts[j]))
            groups[s] = (*groups.get(s, ()), a)
        for choice in itertools.product(*(list(_weak_orders(g)) for g in groups.values())):
            atoms = list(fixed)
            for order in choice:
                for block in order:
                    atoms += [Atom(block[0], "=", b) for b in block[1:]]
                atoms += [Atom(lo[0], "<", hi[0]) for lo, hi in itertools.pairwise(order)]
            yield atoms


def derived_ltos(spj: Spj, cl: Closure | None = None) -> Iterator[Closure]:
    """Closures of all satisfiable derived LTO queries (Def 5.2)."""
    consts = spj.constants
    occs = list(spj.occs)

    def go(i: int, cur: Closure) -> Iterator[Closure]:
        if i == len(occs):
            yield cur
            return
        for atoms in stream_orders(spj.occs[occs[i]], consts):
            nxt = cur.extend(atoms)
            if nxt.sat:
                yield from go(i + 1, nxt)

    start = cl or spj.closure()
    if start.sat:
        yield from go(0, start)


def brute_force(spj: Spj, keep: Callable[[Finding], bool] | None = None) -> list[Finding]:
    """Theorem 5.3: the findings of the first derived LTO query that is not bounded (only the
    findings ``keep`` accepts count)."""
    for cl in derived_ltos(spj):
        found = [f for f in lto_conditions(spj, cl) if keep is None or keep(f)]
        if found:
            return found
    return []


def spj_of(query: Query, proj: tuple[Attr, ...], bag: bool,
           atoms: tuple[Atom, ...] | None = None, extra: tuple[Attr, ...] = ()) -> Spj:
    """The analysis view of ``query``: attributes used in P, L or ``extra`` (per base stream)."""
    atoms = query.atoms if atoms is None else atoms
    used = {(query.occurrences[t.occ], t.name) for a in atoms for t in (a.left, a.right)
            if isinstance(t, Attr)}
    used |= {(query.occurrences[a.occ], a.name) for a in (*proj, *extra)}
    occs = {o: tuple(a for a in query.attrs(o) if (query.occurrences[o], a.name) in used)
            for o in query.occurrences}
    return Spj(occs, proj, atoms, bag)

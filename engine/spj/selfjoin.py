"""Self-joins under set semantics: removal of redundant occurrences (Def 8.2)."""

from __future__ import annotations

import itertools

from .closure import Closure
from .lto import Spj
from .model import Atom, Attr, Term


def facts(spj: Spj, cl: Closure) -> tuple[Atom, ...]:
    """P+ restricted to the query's elements, as atoms."""
    elems: list[Term] = [*spj.attrs, *spj.constants]
    out: list[Atom] = []
    for x, y in itertools.permutations(elems, 2):
        if isinstance(x, int) and isinstance(y, int):
            continue
        if cl.eq(x, y):
            if str(x) < str(y):
                out.append(Atom(x, "=", y))
        elif cl.lt(x, y):
            out.append(Atom(x, "<", y))
        elif cl.le(x, y) and isinstance(x, Attr) and isinstance(y, Attr):
            out.append(Atom(x, "<=", y))
    return tuple(out)


def _covers(spj: Spj, cl: Closure, bases: dict[str, str], j: str, k: str) -> bool:
    """Is occurrence ``j`` redundant, covered by ``k``?"""
    names = {a.name for a in spj.occs[k]}
    if bases[j] != bases[k] or any(a.name not in names for a in spj.occs[j]):
        return False

    def sub(t: Term) -> Term:
        return Attr(k, t.name) if isinstance(t, Attr) and t.occ == j else t

    for atom in facts(spj, cl):
        if j not in {t.occ for t in (atom.left, atom.right) if isinstance(t, Attr)}:
            continue
        x, y = sub(atom.left), sub(atom.right)
        if x == y:
            if atom.op == "<":
                return False
            continue
        ok = cl.lt(x, y) if atom.op == "<" else cl.le(x, y) if atom.op == "<=" else cl.eq(x, y)
        if not ok:
            return False
    return all(cl.eq(a, sub(a)) for a in spj.proj if a.occ == j)


def remove_redundant(spj: Spj, bases: dict[str, str]) -> tuple[Spj, list[str]]:
    """Drop covered occurrences until none is left; returns the query and what was removed."""
    removed: list[str] = []
    while True:
        cl = spj.closure()
        if not cl.sat:
            return spj, removed
        pair = next(((j, k) for j, k in itertools.permutations(spj.occs, 2)
                     if _covers(spj, cl, bases, j, k)), None)
        if pair is None:
            return spj, removed
        j, k = pair

        def sub(t: Term, j: str = j, k: str = k) -> Term:
            return Attr(k, t.name) if isinstance(t, Attr) and t.occ == j else t

        atoms = tuple(Atom(sub(a.left), a.op, sub(a.right)) for a in facts(spj, cl))
        occs = {o: attrs for o, attrs in spj.occs.items() if o != j}
        spj = Spj(occs, tuple(sub(a) for a in spj.proj), atoms, spj.bag)
        removed.append(f"{j} (covered by {k})")

"""Exact integer closure P+ via difference constraints and Floyd–Warshall."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from .model import Atom, Attr, Term

INF = math.inf
Z = 0  # the zero node; the constant k is the term Z + k


def _edges(atom: Atom) -> list[tuple[Term, Term, int]]:
    """``x - y <= w`` constraints of an atom."""
    if atom.op == "<":
        return [(atom.left, atom.right, -1)]
    if atom.op == "<=":
        return [(atom.left, atom.right, 0)]
    return [(atom.left, atom.right, 0), (atom.right, atom.left, 0)]


class Closure:
    """Tightest bounds ``ub(u - v)`` implied by a conjunction of atoms over the integers."""

    def __init__(self, attrs: Sequence[Attr], atoms: Iterable[Atom] = ()):
        self.attrs = tuple(attrs)
        self.index = {a: i + 1 for i, a in enumerate(self.attrs)}
        n = len(self.attrs) + 1
        self.d = [[0 if i == j else INF for j in range(n)] for i in range(n)]
        self.sat = True
        for atom in atoms:
            for x, y, w in _edges(atom):
                self._set(x, y, w)
        self._floyd()

    def _node(self, t: Term) -> tuple[int, int]:
        return (Z, t) if isinstance(t, int) else (self.index[t], 0)

    def _set(self, x: Term, y: Term, w: int) -> tuple[int, int, int]:
        (u, ou), (v, ov) = self._node(x), self._node(y)
        w = w - ou + ov
        if w < self.d[u][v]:
            self.d[u][v] = w
        return u, v, w

    def _floyd(self) -> None:
        d, n = self.d, len(self.d)
        for k in range(n):
            dk = d[k]
            for i in range(n):
                dik = d[i][k]
                if dik == INF:
                    continue
                di = d[i]
                for j in range(n):
                    if dik + dk[j] < di[j]:
                        di[j] = dik + dk[j]
        self.sat = all(d[i][i] >= 0 for i in range(n))

    def extend(self, atoms: Iterable[Atom]) -> Closure:
        """The closure of the atoms so far plus ``atoms`` (incremental, O(n^2) per edge)."""
        new = object.__new__(Closure)
        new.attrs, new.index, new.sat = self.attrs, self.index, self.sat
        new.d = [row[:] for row in self.d]
        d, n = new.d, len(new.d)
        for atom in atoms:
            for x, y, w in _edges(atom):
                u, v, w = new._set(x, y, w)
                if not new.sat:
                    continue
                du, dv = [d[i][u] for i in range(n)], d[v]
                for i in range(n):
                    if du[i] == INF:
                        continue
                    di, base = d[i], du[i] + w
                    for j in range(n):
                        if base + dv[j] < di[j]:
                            di[j] = base + dv[j]
                new.sat = all(d[i][i] >= 0 for i in range(n))
        return new

    # -- queries ------------------------------------------------------------
    def ub(self, x: Term, y: Term) -> float:
        """Tightest upper bound on ``x - y``."""
        (u, ou), (v, ov) = self._node(x), self._node(y)
        return self.d[u][v] + ou - ov

    def lt(self, x: Term, y: Term) -> bool:
        return self.ub(x, y) <= -1

    def le(self, x: Term, y: Term) -> bool:
        return self.ub(x, y) <= 0

    def eq(self, x: Term, y: Term) -> bool:
        return self.le(x, y) and self.le(y, x)

    def upper(self, a: Attr) -> float:
        """Largest feasible value of ``a`` (``inf`` if not upper-bounded)."""
        return self.d[self.index[a]][Z]

    def lower(self, a: Attr) -> float:
        """Smallest feasible value of ``a`` (``-inf`` if not lower-bounded)."""
        return -self.d[Z][self.index[a]]

    def bounded(self, a: Attr) -> bool:
        return self.upper(a) < INF and self.lower(a) > -INF

    def classes(self, attrs: Iterable[Attr]) -> int:
        """``|attrs|_eq``: the number of equivalence classes the attributes fall into."""
        reps: list[Attr] = []
        for a in attrs:
            if not any(self.eq(a, r) for r in reps):
                reps.append(a)
        return len(reps)

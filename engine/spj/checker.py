"""The polynomial checker of Fig. 2: C1, C2 on Q, C3 on subqueries of at most four attributes."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace

from .closure import Closure
from .lto import Finding, Spj, c1_c2, derived_ltos, lto_conditions
from .model import Atom, Attr


def order_facts(cl: Closure, xs: tuple[Attr, ...], ks: list[int]) -> list[Atom]:
    """The <, <=, = facts of ``cl`` among ``xs`` and the constants ``ks``."""
    atoms: list[Atom] = []
    for x, y in itertools.permutations(xs, 2):
        if cl.eq(x, y):
            if x < y:
                atoms.append(Atom(x, "=", y))
        elif cl.lt(x, y):
            atoms.append(Atom(x, "<", y))
        elif cl.le(x, y):
            atoms.append(Atom(x, "<=", y))
    for x in xs:
        for k in ks:
            if cl.eq(x, k):
                atoms.append(Atom(x, "=", k))
            elif cl.lt(x, k):
                atoms.append(Atom(x, "<", k))
            elif cl.lt(k, x):
                atoms.append(Atom(k, "<", x))
            elif cl.le(x, k):  # integer gaps left by <= joins, e.g. 10 = C <= E
                atoms.append(Atom(x, "<=", k))
            elif cl.le(k, x):
                atoms.append(Atom(k, "<=", x))
    return atoms


def _extremes(spj: Spj) -> list[int]:
    consts = spj.constants
    return sorted({consts[0], consts[-1]}) if consts else []


def subquery(spj: Spj, cl: Closure, xs: tuple[Attr, ...]) -> Spj:
    """``Π_∅ σ_{IND(X ∪ {kmin, kmax}, P)}`` over the streams owning ``xs``."""
    occs: dict[str, tuple[Attr, ...]] = {}
    for x in xs:
        occs[x.occ] = (*occs.get(x.occ, ()), x)
    return Spj(occs, (), tuple(order_facts(cl, xs, _extremes(spj))), spj.bag)


def lift(spj: Spj, cl: Closure, f: Finding, xs: tuple[Attr, ...]) -> Finding:
    """Carry a subquery's violating LTO back to Q: Q's closure plus the LTO's order on ``xs``."""
    sub_cl = f.closure
    lifted = cl.extend(order_facts(sub_cl, xs, _extremes(spj))) if sub_cl else None
    return replace(f, closure=lifted if lifted is not None and lifted.sat else sub_cl)


def joined(spj: Spj, cl: Closure) -> tuple[Attr, ...]:
    """Attributes in some cross-stream order fact of P+ (only these can be Refs)."""
    return tuple(x for x in spj.attrs if any(
        y.occ != x.occ and (cl.le(x, y) or cl.le(y, x)) and not cl.eq(x, y)
        for y in spj.attrs))


def check(spj: Spj, cl: Closure | None = None,
          keep: Callable[[Finding], bool] | None = None) -> list[Finding]:
    """Fig. 2; an empty list means bounded. Step 4 reports the first violating subquery.
    ``keep`` restricts the conditions checked to the findings it accepts."""
    cl = cl or spj.closure()
    if not cl.sat or (spj.bag and len(spj.occs) == 1):
        return []
    found = [f for f in c1_c2(spj, cl) if keep is None or keep(f)]
    cands = joined(spj, cl)
    for size in (2, 3, 4) if not spj.bag else (2,):
        for xs in itertools.combinations(cands, size):
            if len({x.occ for x in xs}) < 2:
                continue
            sub = subquery(spj, cl, xs)
            for lto in derived_ltos(sub):
                # C2 can also arise inside an LTO when <= joins meet filters (A=B, B<=E<=A)
                new = [f for f in lto_conditions(sub, lto)
                       if not (f.condition == "C2" and cl.eq(*f.attrs))
                       and (keep is None or keep(f))]
                if new:
                    return [*found, lift(spj, cl, new[0], xs)]
    return found

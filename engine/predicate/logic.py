"""Building AND/OR with simplification, and the sound implication test.

Everything here reasons about the rows that *pass* (the predicate is TRUE): the form holds no
NOT, so a conjunction passes iff all operands pass and a disjunction iff one does. No rule uses
the law of the excluded middle on values (``x < 1 OR x >= 1`` is not TRUE: NULLs pass neither);
only ``x IS NULL OR x IS NOT NULL`` is TRUE.
"""

from __future__ import annotations

from collections.abc import Iterable

from .form import FALSE, TRUE, And, Const, InSet, IsNull, Junction, Or, Pred, in_set, sort_key
from .values import FULL, intersect, subset, union

#: Operand count above which absorption and box merging between operands are skipped (they
#: are quadratic or worse); the result is still correct, only less simplified.
ABSORB_LIMIT = 64


def _flatten(kind: type[Junction], operands: Iterable[Pred]) -> list[Pred]:
    out: list[Pred] = []
    for p in operands:
        out.extend(p.operands if isinstance(p, kind) else (p,))
    return out


def _merge_atoms(operands: list[Pred], conjunction: bool) -> list[Pred] | Const:
    """One atom per column: value sets intersected (AND) or united (OR); IS NULL beside a value
    set is FALSE under AND, and IS NULL with IS NOT NULL is TRUE under OR."""
    sets: dict[str, InSet] = {}
    nulls: dict[str, IsNull] = {}
    rest: list[Pred] = []
    for p in operands:
        if isinstance(p, InSet):
            old = sets.get(p.column)
            if old is None:
                sets[p.column] = p
                continue
            combine = intersect if conjunction else union
            merged = in_set(p.column, p.ctype, combine(p.ctype, old.values, p.values))
            if merged == FALSE:
                return FALSE
            sets[p.column] = merged  # type: ignore[assignment]
        elif isinstance(p, IsNull):
            nulls[p.column] = p
        else:
            rest.append(p)
    for column in nulls.keys() & sets.keys():
        if conjunction:
            return FALSE
        if sets[column].values == FULL:
            return TRUE
    return [*sets.values(), *nulls.values(), *rest]


def _absorb(operands: list[Pred], conjunction: bool) -> list[Pred]:
    """Drop operands another one makes redundant: under AND the weaker (implied) one, under OR
    the stronger (implying) one. Greedy in the given (sorted) order, so every dropped operand is
    covered by a kept one."""
    if len(operands) > ABSORB_LIMIT:
        return operands
    kept: list[Pred] = []
    for p in operands:
        def covers(a: Pred, b: Pred) -> bool:  # a makes b redundant
            return implies(a, b) if conjunction else implies(b, a)
        if any(covers(k, p) for k in kept):
            continue
        kept = [k for k in kept if not covers(p, k)] + [p]
    return kept


def _box(p: Pred) -> dict[str, Pred] | None:
    """A conjunction of atoms (or one atom) as column -> atom; None for anything else."""
    atoms = p.operands if isinstance(p, And) else (p,)
    if not all(isinstance(a, (InSet, IsNull)) for a in atoms):
        return None
    box = {a.column: a for a in atoms}  # type: ignore[attr-defined]
    return box if len(box) == len(atoms) else None


def _merge_boxes(operands: list[Pred]) -> list[Pred]:
    """Under OR, merge two conjunctions of atoms that differ only in one column's value set."""
    changed = True
    while changed:
        changed = False
        for i in range(len(operands)):
            bi = _box(operands[i])
            if bi is None:
                continue
            for j in range(i + 1, len(operands)):
                bj = _box(operands[j])
                if bj is None or bi.keys() != bj.keys():
                    continue
                differ = [c for c in bi if bi[c] != bj[c]]
                if len(differ) != 1:
                    continue
                a, b = bi[differ[0]], bj[differ[0]]
                if not (isinstance(a, InSet) and isinstance(b, InSet)):
                    continue
                merged = in_set(a.column, a.ctype, union(a.ctype, a.values, b.values))
                others = [bi[c] for c in bi if c != differ[0]]
                operands = [o for k, o in enumerate(operands) if k not in (i, j)]
                operands.append(conjoin(*others, merged))
                changed = True
                break
            if changed:
                break
    return operands


def _operands(kind: type[And] | type[Or], operands: Iterable[Pred]) -> list[Pred] | Const:
    """The operands of an AND or OR (``kind``) flattened, one atom per column, deduplicated
    and sorted; or the constant the whole reduces to."""
    conjunction = kind is And
    unit, zero = (TRUE, FALSE) if conjunction else (FALSE, TRUE)
    flat = [p for p in _flatten(kind, operands) if p != unit]
    if any(p == zero for p in flat):
        return zero
    merged = _merge_atoms(flat, conjunction=conjunction)
    if isinstance(merged, Const):
        return merged
    return sorted(set(merged), key=sort_key)


def _junction(kind: type[And] | type[Or], unique: list[Pred]) -> Pred:
    """The AND or OR (``kind``) of the sorted ``unique`` operands without the redundant ones."""
    conjunction = kind is And
    unique = _absorb(unique, conjunction=conjunction)
    if not unique:
        return TRUE if conjunction else FALSE
    return unique[0] if len(unique) == 1 else kind(tuple(sorted(unique, key=sort_key)))


def conjoin(*operands: Pred) -> Pred:
    """The simplified AND of ``operands`` (TRUE when there are none)."""
    unique = _operands(And, operands)
    return unique if isinstance(unique, Const) else _junction(And, unique)


def disjoin(*operands: Pred) -> Pred:
    """The simplified OR of ``operands`` (FALSE when there are none)."""
    unique = _operands(Or, operands)
    if isinstance(unique, Const):
        return unique
    boxes = _merge_boxes(unique) if len(unique) <= ABSORB_LIMIT else unique
    if len(boxes) < len(unique):
        return disjoin(*boxes)
    return _junction(Or, unique)


def implies(p: Pred, q: Pred) -> bool:
    """Sound: True only if every row that passes ``p`` passes ``q`` (False when unsure). Exact
    when ``p`` and ``q`` are conjunctions of single-column atoms."""
    if p in (FALSE, q) or q == TRUE:
        return True
    if p == TRUE or q == FALSE:
        return False
    if isinstance(p, Or):
        return all(implies(o, q) for o in p.operands)
    if isinstance(q, And):
        return all(implies(p, o) for o in q.operands)
    if isinstance(p, And) and any(implies(o, q) for o in p.operands):
        return True
    if isinstance(q, Or):
        return any(implies(p, o) for o in q.operands)
    if isinstance(p, InSet) and isinstance(q, InSet):
        return p.column == q.column and subset(p.ctype, p.values, q.values)
    return False

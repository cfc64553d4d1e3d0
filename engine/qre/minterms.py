"""Predicates as a symbolic alphabet: the satisfiable combinations (minterms) of a query's
predicates, over-approximated soundly.

Comparisons ``t op c`` of the same term ``t`` (an expression over fields, e.g. ``x`` or
``x % 2``) against constants are decided exactly by sampling one value per interval between
the constants (``x % m`` is restricted to ``[0, m)``); different terms are treated as
independent, and anything else (callables, comparisons between non-constant terms of other
shapes) as an opaque boolean. Treating more combinations as possible than really are only
makes the strong-typing checks reject more queries, never accept a wrong one.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

from ..expr.parser import render
from .errors import QREError
from .expr import run
from .ops import EVALUATION_ERRORS, Pred

Formula = tuple[Any, ...]  # ("const", b) | ("lit", i) | ("not", f) | ("and"/"or", f, g)
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
MAX_COMBINATIONS = 1 << 14


class TooComplex(QREError):
    """Raised when the predicates have too many combinations to enumerate."""


class _Literals:
    """Interns literals ``(term, op, const)`` and opaque booleans ``(key,)``."""

    def __init__(self) -> None:
        self.items: list[tuple[Any, ...]] = []
        self.index: dict[tuple[Any, ...], int] = {}
        self.domains: dict[str, tuple[Any, ...]] = {}

    def add(self, lit: tuple[Any, ...]) -> Formula:
        if lit not in self.index:
            self.index[lit] = len(self.items)
            self.items.append(lit)
        return ("lit", self.index[lit])

    def formula(self, tree: tuple[Any, ...]) -> Formula:
        tag = tree[0]
        if tag == "const" and isinstance(tree[1], bool):
            return ("const", tree[1])
        if tag == "not":
            return ("not", self.formula(tree[1]))
        if tag in ("and", "or"):
            return (tag, self.formula(tree[1]), self.formula(tree[2]))
        if tag == "cmp":
            return self._comparison(tree)
        return self.add((render(tree),))

    def _comparison(self, tree: tuple[Any, ...]) -> Formula:
        op, left, right = tree[1], tree[2], tree[3]
        if left[0] == "const" and right[0] == "const":
            try:
                return ("const", bool(run(tree, None, ())))
            except EVALUATION_ERRORS:  # fails on every item: decided at run time
                return self.add((render(tree),))
        if left[0] == "const":
            op, left, right = _FLIP[op], right, left
        if right[0] != "const":
            left, right = ("bin", "-", left, right), ("const", 0)
        term = render(left)
        modulus = left[3] if left[0] == "bin" and left[1] == "%" else ("",)
        if modulus[0] == "const" and _num(modulus[1]) and modulus[1] > 0:
            self.domains[term] = (0, modulus[1])
        return self.add((term, op, right[1]))


def _num(value: Any) -> bool:
    """A number the interval sampling can use (finite: infinities and NaN are not)."""
    return isinstance(value, int | Fraction) or (isinstance(value, float) and math.isfinite(value))


def _holds(op: str, a: Any, b: Any) -> bool:
    return bool(run(("cmp", op, ("const", a), ("const", b)), None, ()))


def _group_vectors(lits: list[tuple[Any, ...]], domain: tuple[Any, ...] | None
                   ) -> set[tuple[bool, ...]] | None:
    """Realizable truth vectors of literals on one term, or None if it cannot be decided."""
    consts = [lit[2] for lit in lits]
    if all(_num(c) for c in (*consts, *(domain or ()))):
        cuts = sorted(set(consts) | set(domain or ()))
        points = [cuts[0] - 1, cuts[-1] + 1, *cuts]
        points += [Fraction(a + b) / 2 for a, b in itertools.pairwise(cuts)]
        if domain:
            points = [p for p in points if domain[0] <= p < domain[1]]
    elif all(lit[1] in ("==", "!=") for lit in lits):
        points = [*consts, object()]
    else:
        return None
    return {tuple(_holds(lit[1], p, lit[2]) for lit in lits) for p in points}


def minterms(preds: list[Pred]) -> list[frozenset[str]]:
    """The possible combinations of predicates, each as the set of keys of those that hold."""
    lits = _Literals()
    formulas = {p.key: lits.formula(p.expr.tree) if p.expr else lits.add((p.key,))
                for p in preds}
    groups: dict[str, list[int]] = {}
    for i, lit in enumerate(lits.items):
        groups.setdefault(lit[0] if len(lit) == 3 else f"\0{i}", []).append(i)
    choices: list[tuple[list[int], set[tuple[bool, ...]]]] = []
    for term, members in groups.items():
        vectors = None
        if len(lits.items[members[0]]) == 3:
            vectors = _group_vectors([lits.items[i] for i in members], lits.domains.get(term))
        if vectors is None:
            for i in members:
                choices.append(([i], {(False,), (True,)}))
        else:
            choices.append((members, vectors))
    total = 1
    for _, vectors in choices:
        total *= len(vectors)
    if total > MAX_COMBINATIONS:
        raise TooComplex(f"{total} combinations of predicate literals")
    result: set[frozenset[str]] = set()
    for combo in itertools.product(*(sorted(v) for _, v in choices)):
        value = [False] * len(lits.items)
        for (members, _), vector in zip(choices, combo, strict=True):
            for i, bit in zip(members, vector, strict=True):
                value[i] = bit
        result.add(frozenset(k for k, f in formulas.items() if _eval(f, value)))
    return sorted(result, key=sorted)


def _eval(formula: Formula, value: list[bool]) -> bool:
    tag = formula[0]
    if tag == "const":
        return formula[1]
    if tag == "lit":
        return value[formula[1]]
    if tag == "not":
        return not _eval(formula[1], value)
    if tag == "and":
        return _eval(formula[1], value) and _eval(formula[2], value)
    return _eval(formula[1], value) or _eval(formula[2], value)

"""Events a query cannot evaluate: a predicate of the query fails on the event, or an atom whose
predicate holds fails to compute its value (division by zero, a type mismatch, ...).

Such an event is rejected when it arrives, with the reason, like an event lacking a field the
query reads: the keyed operator puts it in the quarantine output and the stream reference
applies the same rule, so both see the same stream. The rule depends on the event alone, never
on the state. Whether an atom *can* fail is decided statically from the expression and the
recording's column types, so queries whose atoms cannot fail (comparisons and ``+ - *`` of
numeric columns) pay nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..expr.parser import Tree
from .errors import EvaluationError
from .ops import Op, Pred
from .terms import Atom, Term
from .types import BOOL, NUM, STR, Type
from .values import Failure

#: The QRE type of the values of each column type (timestamps are read as microseconds).
COLUMN_VALUE_TYPES: dict[str, Type] = {"int": NUM, "double": NUM, "timestamp": NUM,
                                       "bool": BOOL, "string": STR}


def atoms_of(term: Term) -> list[Atom]:
    """The atoms of ``term``, each (predicate, operation) once, left to right."""
    found: dict[tuple[str, str], Atom] = {}
    stack = [term]
    while stack:
        node = stack.pop()
        if isinstance(node, Atom):
            found.setdefault((node.pred.key, str(node.op)), node)
        stack.extend(reversed(node.children()))
    return list(found.values())


def _numeric(tree: Tree, types: Mapping[str, Type]) -> bool:
    """Does ``tree`` compute a number without raising, whatever the item's values?"""
    tag = tree[0]
    if tag == "const":
        return isinstance(tree[1], int | float)
    if tag == "field":
        return types.get(tree[1]) in (NUM, BOOL)
    if tag == "bin":
        return tree[1] in ("+", "-", "*") and all(_numeric(t, types) for t in tree[2:])
    if tag == "neg":
        return _numeric(tree[1], types)
    if tag == "call":
        return tree[1] in ("abs", "min", "max") and all(_numeric(t, types) for t in tree[2:])
    return False


def _safe(tree: Tree, types: Mapping[str, Type]) -> bool:
    """Does ``tree`` compute a value without raising, whatever the item's values?"""
    tag = tree[0]
    if tag in ("const", "field") or _numeric(tree, types):
        return True
    if tag == "cmp":
        if tree[1] in ("==", "!="):
            return all(_safe(t, types) for t in tree[2:])
        return all(_numeric(t, types) for t in tree[2:])
    if tag in ("and", "or", "not", "tuple"):
        return all(_safe(t, types) for t in tree[1:])
    return False


def _may_fail(part: Pred | Op, types: Mapping[str, Type]) -> bool:
    expr = part.expr if isinstance(part, Pred) else part.fn
    tree = getattr(expr, "tree", None)
    return tree is None or not _safe(tree, types)


class ItemCheck:
    """The atoms of a query and which of them can fail, given the types of the recording's
    columns (``column_types``: column -> catalog type; a column without a type may hold
    anything)."""

    def __init__(self, term: Term, column_types: Mapping[str, str] | None = None):
        types = {c: COLUMN_VALUE_TYPES.get(t, "any") for c, t in (column_types or {}).items()}
        self.atoms = atoms_of(term)
        self.risky = [a for a in self.atoms
                      if _may_fail(a.pred, types) or _may_fail(a.op, types)]

    def problem(self, item: Mapping[str, Any], everything: bool = False) -> str | None:
        """Why ``item`` cannot be evaluated, or None. Only the atoms that can fail are tried
        unless ``everything`` (the reference tries them all; the answer is the same)."""
        for atom in self.atoms if everything else self.risky:
            try:
                holds = atom.pred(item)
            except EvaluationError as err:
                return str(err)
            if holds:
                value = atom.op(item)
                if isinstance(value, Failure):
                    return value.reason
        return None

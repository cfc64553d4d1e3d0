"""Hierarchical derivatives (Figs. 4-6 of the paper) for strongly typed queries.

Choice is flattened into q-sets (tuples of nodes) nested inside terms, so ``combine`` keeps one
node with two independently advancing children instead of Antimirov's cartesian product. A node
is dropped as soon as one of its q-set children becomes empty (the hierarchical form of the ⊥
rules), which keeps the state within ``size(query)²`` nodes (Lemma 12).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import QRETypeError
from .ops import Op, Pred
from .strong import strongly_typed
from .terms import Apply, Atom, Choice, Combine, Eps, Iter, Split, Term, check_item
from .values import Outcome

QSet = tuple["HNode", ...]


class HNode:
    """A hierarchical node: caches its outputs on the empty stream and its size."""

    __slots__ = ("outs", "size")
    outs: tuple[Any, ...]
    size: int


class HEps(HNode):
    __slots__ = ()

    def __init__(self, value: Any):
        self.outs, self.size = (value,), 1


class HAtom(HNode):
    __slots__ = ("op", "pred")

    def __init__(self, pred: Pred, op: Op):
        self.pred, self.op = pred, op
        self.outs, self.size = (), 2


class HApply(HNode):
    __slots__ = ("op", "sub")

    def __init__(self, sub: QSet, op: Op):
        self.sub, self.op = sub, op
        self.outs = tuple(op(a) for a in _outs(sub))
        self.size = 1 + _size(sub)


class HBinary(HNode):
    """Common shape of split, iter and combine nodes: two q-sets and an operation."""

    __slots__ = ("left", "op", "right")

    def __init__(self, left: QSet, right: QSet, op: Op):
        self.left, self.right, self.op = left, right, op
        self.size = 1 + _size(left) + _size(right)
        self.outs = self._outs()

    def _outs(self) -> tuple[Any, ...]:
        return tuple(self.op(a, b) for a in _outs(self.left) for b in _outs(self.right))


class HSplit(HBinary):
    __slots__ = ()


class HCombine(HBinary):
    __slots__ = ()


class HIter(HBinary):
    __slots__ = ()

    def _outs(self) -> tuple[Any, ...]:
        return _outs(self.left)


def _outs(qset: QSet) -> tuple[Any, ...]:
    return tuple(value for node in qset for value in node.outs)


def _size(qset: QSet) -> int:
    return sum(node.size for node in qset)


def to_qset(term: Term) -> QSet:
    """Convert a core query: flatten choices, drop ⊥ and nodes with an empty child (except
    ``iter(f, ⊥, op)``, which is ``f``)."""
    if isinstance(term, Choice):
        return to_qset(term.left) + to_qset(term.right)
    if isinstance(term, Eps):
        return (HEps(term.value),)
    if isinstance(term, Atom):
        return (HAtom(term.pred, term.op),)
    if isinstance(term, Apply):
        sub = to_qset(term.sub)
        return (HApply(sub, term.op),) if sub else ()
    if isinstance(term, Split | Iter | Combine):
        left, right = (to_qset(child) for child in term.children())
        if isinstance(term, Iter) and not right:
            return left  # iter(f, ⊥, op) ≡ f: only the init can match
        if not (left and right):
            return ()
        kind = HSplit if isinstance(term, Split) else HIter if isinstance(term, Iter) else HCombine
        return (kind(left, right, term.op),)
    return ()  # bottom


def derive(qset: QSet, item: Any, memo: dict[int, QSet]) -> QSet:
    """The hierarchical derivative of a q-set by ``item`` (memoised per step by identity)."""
    cached = memo.get(id(qset))
    if cached is None:
        cached = memo[id(qset)] = tuple(x for node in qset for x in _derive(node, item, memo))
    return cached


def _derive(node: HNode, item: Any, memo: dict[int, QSet]) -> QSet:
    if isinstance(node, HAtom):
        return (HEps(node.op(item)),) if node.pred(item) else ()
    if isinstance(node, HApply):
        sub = derive(node.sub, item, memo)
        return (HApply(sub, node.op),) if sub else ()
    if isinstance(node, HCombine):
        left = derive(node.left, item, memo)
        right = derive(node.right, item, memo) if left else ()
        return (HCombine(left, right, node.op),) if right else ()
    if isinstance(node, HBinary):
        left = derive(node.left, item, memo)
        out: list[HNode] = [type(node)(left, node.right, node.op)] if left else []
        pending = _outs(node.left)
        if pending:
            right = derive(node.right, item, memo)
            if right:
                for value in pending:
                    thread = HApply(right, node.op.partial(value))
                    out.append(thread if isinstance(node, HSplit)
                               else HIter((thread,), node.right, node.op))
        return tuple(out)
    return ()  # eps


@dataclass(frozen=True)
class HierarchicalState:
    """Evaluator state: the root query (for field checks) and the derived q-set."""

    root: Term
    qset: QSet

    def step(self, item: Any) -> HierarchicalState:
        """The state after reading ``item``."""
        check_item(self.root, item)
        return HierarchicalState(self.root, derive(self.qset, item, {}))

    def output(self) -> Outcome:
        """The output on the prefix read so far (never ambiguous for strongly typed queries)."""
        return Outcome.of(_outs(self.qset))

    def size(self) -> int:
        """Number of nodes in the state (static subterms counted in full)."""
        return _size(self.qset)


class HierarchicalEvaluator:
    """Engine for strongly typed queries: state at most size(query)² nodes."""

    def __init__(self, check: bool = True):
        self.check = check

    def start(self, query: Term) -> HierarchicalState:
        """Initial state; rejects queries that are not strongly typed unless ``check`` is off."""
        if self.check:
            ok, reason = strongly_typed(query)
            if not ok:
                raise QRETypeError(f"the hierarchical engine needs a strongly typed query: "
                                   f"{reason}")
        return HierarchicalState(query, to_qset(query))

"""Incremental evaluation with Antimirov derivatives and rate pruning (Fig. 3 of the paper).

The state is a multiset (a tuple, in derivation order) of queries whose choice is equivalent,
under the unambiguous semantics, to the derivative of the query by the prefix read so far.
After each item, only the first two queries of each rate are kept (Observation 3): this bounds
the state independently of the stream and preserves none / one value / ambiguous exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .terms import Apply, Atom, Bottom, Choice, Combine, Eps, Iter, Split, Term, check_item
from .values import Outcome

KEEP_PER_RATE = 2


def derivative(node: Term, item: Any, memo: dict[int, list[Term]]) -> list[Term]:
    """The Antimirov derivative of ``node`` by ``item`` (a multiset, as a list)."""
    key = id(node)
    cached = memo.get(key)
    if cached is None:
        cached = memo[key] = _derive(node, item, memo)
    return cached


def _derive(node: Term, item: Any, memo: dict[int, list[Term]]) -> list[Term]:
    if isinstance(node, Atom):
        return [Eps(node.op(item))] if node.pred(item) else []
    if isinstance(node, Choice):
        return derivative(node.left, item, memo) + derivative(node.right, item, memo)
    if isinstance(node, Apply):
        return [Apply(x, node.op) for x in derivative(node.sub, item, memo)]
    if isinstance(node, Combine):
        lefts = derivative(node.left, item, memo)
        rights = derivative(node.right, item, memo) if lefts else []
        return [Combine(x, y, node.op) for x in lefts for y in rights]
    if isinstance(node, Split):
        out: list[Term] = [Split(x, node.right, node.op)
                           for x in derivative(node.left, item, memo)]
        if node.left.outs:
            rights = derivative(node.right, item, memo)
            out += [Apply(y, node.op.partial(a)) for a in node.left.outs for y in rights]
        return out
    if isinstance(node, Iter):
        out = [Iter(x, node.body, node.op) for x in derivative(node.init, item, memo)]
        if node.init.outs:
            bodies = derivative(node.body, item, memo)
            out += [Iter(Apply(y, node.op.partial(b)), node.body, node.op)
                    for b in node.init.outs for y in bodies]
        return out
    return []  # eps and bottom


def prune(queries: list[Term]) -> tuple[Term, ...]:
    """Keep the first ``KEEP_PER_RATE`` queries of every rate (never fewer: see P1)."""
    seen: dict[int, int] = {}
    kept = []
    for query in queries:
        count = seen.get(query.rate, 0)
        if count < KEEP_PER_RATE:
            seen[query.rate] = count + 1
            kept.append(query)
    return tuple(kept)


@dataclass(frozen=True)
class DerivativeState:
    """Evaluator state: the root query (for field checks) and the pruned derivative multiset."""

    root: Term
    queries: tuple[Term, ...]

    def step(self, item: Any) -> DerivativeState:
        """The state after reading ``item``."""
        check_item(self.root, item)
        memo: dict[int, list[Term]] = {}
        derived: list[Term] = []
        for query in self.queries:
            derived += derivative(query, item, memo)
        return DerivativeState(self.root, prune(derived))

    def output(self) -> Outcome:
        """The unambiguous output on the prefix read so far."""
        return Outcome.of([value for query in self.queries for value in query.outs])

    def size(self) -> int:
        """Total number of term nodes in the state (static subterms counted in full)."""
        return sum(query.size for query in self.queries)


class DerivativeEvaluator:
    """The general engine: correct for every query, state bounded in the stream length."""

    @staticmethod
    def start(query: Term) -> DerivativeState:
        return DerivativeState(query, (query,) if not isinstance(query, Bottom) else ())


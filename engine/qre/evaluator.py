"""The incremental evaluator interface and the list-of-prefixes drivers."""

from __future__ import annotations

from typing import Any, Protocol

from .derivative import DerivativeEvaluator
from .terms import Term
from .values import Outcome


class State(Protocol):
    """An immutable evaluator state that a streaming layer carries between micro-batches."""

    def step(self, item: Any) -> State: ...

    def output(self) -> Outcome: ...

    def size(self) -> int: ...


class Evaluator(Protocol):
    """An evaluation strategy: ``start(query)`` gives the state before any item."""

    def start(self, query: Term) -> State: ...


def run(evaluator: Evaluator, query: Term, items: list[Any]) -> list[Outcome]:
    """Outputs on every prefix of ``items`` (empty prefix first) with ``evaluator``."""
    state = evaluator.start(query)
    outputs = [state.output()]
    for item in items:
        state = state.step(item)
        outputs.append(state.output())
    return outputs


def evaluate(query: Term, items: list[Any]) -> list[Outcome]:
    """Incremental (derivative-based) outputs on every prefix, the empty prefix first."""
    return run(DerivativeEvaluator(), query, items)

"""The ``Outcome`` shared by all evaluators, and ``Failure``, the value of an operation that
failed (the unit value is in ``engine.expr``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["value", "none", "ambiguous", "error"]


@dataclass(frozen=True)
class Failure:
    """The value of an operation that raised (division by zero, a type mismatch, ...): it
    propagates through every operation applied to it, so an output computed from it is an
    error (``Outcome.kind == "error"``) instead of an exception stopping the evaluation."""

    reason: str

    def __repr__(self) -> str:
        return f"Failure({self.reason!r})"


@dataclass(frozen=True)
class Outcome:
    """The unambiguous output on one prefix: a value, no parse, several parses, or an error (the
    single parse's value is a :class:`Failure`, in ``value``)."""

    kind: Kind
    value: Any = None

    @staticmethod
    def of(outputs: list[Any] | tuple[Any, ...]) -> Outcome:
        """Project a multiset of outputs (a list, multiplicity kept) onto the tri-state."""
        if not outputs:
            return NONE
        if len(outputs) == 1:
            return Outcome.single(outputs[0])
        return AMBIGUOUS

    @staticmethod
    def single(value: Any) -> Outcome:
        """The output of exactly one parse, giving ``value``."""
        return Outcome("error" if isinstance(value, Failure) else "value", value)

    def __repr__(self) -> str:
        if self.kind in ("value", "error"):
            return f"Outcome({self.value!r})"
        return f"Outcome.{self.kind}"


NONE = Outcome("none")
AMBIGUOUS = Outcome("ambiguous")

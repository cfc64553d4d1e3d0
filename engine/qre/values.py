"""The tri-state ``Outcome`` shared by all evaluators (the unit value is in ``engine.expr``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["value", "none", "ambiguous"]


@dataclass(frozen=True)
class Outcome:
    """The unambiguous output on one prefix: a value, no parse, or several parses."""

    kind: Kind
    value: Any = None

    @staticmethod
    def of(outputs: list[Any] | tuple[Any, ...]) -> Outcome:
        """Project a multiset of outputs (a list, multiplicity kept) onto the tri-state."""
        if not outputs:
            return NONE
        if len(outputs) == 1:
            return Outcome("value", outputs[0])
        return AMBIGUOUS

    def __repr__(self) -> str:
        return f"Outcome({self.value!r})" if self.kind == "value" else f"Outcome.{self.kind}"


NONE = Outcome("none")
AMBIGUOUS = Outcome("ambiguous")

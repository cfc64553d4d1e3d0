"""Runtime values shared by all evaluators: the unit value and the tri-state ``Outcome``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


class _Unit:
    """The single value of the unit type (the paper's ``def``)."""

    _instance: _Unit | None = None

    def __new__(cls) -> _Unit:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "unit"

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (_Unit, ())


UNIT = _Unit()

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

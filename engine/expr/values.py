"""The unit value of the expression language (the constant ``unit``; the paper's ``def``)."""

from __future__ import annotations


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

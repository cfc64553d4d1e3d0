"""Errors of the expression language."""

from __future__ import annotations

from ..errors import RepriseError


class ExprSyntaxError(RepriseError):
    """Malformed text; carries the 1-based ``line`` and ``column`` of the offending token."""

    def __init__(self, message: str, line: int, column: int):
        super().__init__(f"line {line}, column {column}: {message}")
        self.line = line
        self.column = column

"""Exceptions raised by the QRE package."""

from __future__ import annotations

from ..errors import RepriseError
from ..expr.errors import ExprSyntaxError


class QREError(RepriseError):
    """Base class of every error raised by ``engine.qre``."""


class QRESyntaxError(QREError, ExprSyntaxError):
    """Malformed text; carries the 1-based ``line`` and ``column`` of the offending token."""


class QRETypeError(QREError):
    """An ill-typed or ill-formed query; the message names the offending sub-expression."""


class EvaluationError(QREError):
    """A predicate could not be evaluated on an item (division by zero, a type mismatch, ...)."""


class MissingFieldError(QREError):
    """An item lacks a field that the query reads; ``field`` names it."""

    def __init__(self, field: str, item: object):
        super().__init__(f"item is missing field {field!r} read by the query: {item!r}")
        self.field = field
        self.item = item

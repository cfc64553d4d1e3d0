"""The front end's error type."""

from __future__ import annotations

from ..errors import RepriseError


class SpjError(RepriseError, ValueError):
    """A query outside the supported SPJ class, or one that does not fit its schemas."""

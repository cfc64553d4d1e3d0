"""The front end's error type."""

from __future__ import annotations

from ..errors import RepriseError


class SpjError(RepriseError):
    """A query outside the supported SPJ class, or one that does not fit its schemas."""


class SpjUnbounded(SpjError):
    """An unbounded query that was not allowed to run on the full history (``reason``: its
    violations and adversarial input family)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(f"{reason}; allow_unbounded=True runs it on the full history (the state "
                         "grows)")

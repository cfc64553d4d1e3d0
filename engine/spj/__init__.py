"""Bounded-memory analysis of SPJ(+aggregate) continuous queries (Arasu et al.; Schiff & Özçep)."""

from .analysis import Analysis, analyze
from .errors import SpjError
from .executor import SpjExecutor, SpjState
from .reference import reference
from .verdict import Violation
from .witness import Family, Witness, states

__all__ = ["Analysis", "Family", "SpjError", "SpjExecutor", "SpjState", "Violation", "Witness",
           "analyze", "reference", "states"]

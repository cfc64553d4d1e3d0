"""Choosing how the executor runs a query: on synopses, or on the full history."""

from __future__ import annotations

from dataclasses import dataclass

from .analysis import Analysis
from .checker import check as fig2
from .closure import Closure
from .errors import SpjUnbounded
from .lto import Spj, spj_of
from .model import Query
from .rules import spj_verdict
from .synopsis import spj_synopsis

SYNOPSIS, FULL_HISTORY = "synopsis", "full-history"


@dataclass(frozen=True)
class DownSets:
    """Run on the down-set engine (application time); ``units``: the analyser's bound."""

    units: int


@dataclass(frozen=True)
class PerLto:
    """Run a set self-join per derived LTO query of ``spj`` (its redundant occurrences removed
    in each); the engine computes its bound."""

    spj: Spj


Source = tuple[Spj, Closure, int] | DownSets | PerLto
"""What a synopsis run needs: the analysed query, its closure and the memory bound in units
(bucket synopses), the down-set engine's bound, or the query to split per derived LTO query."""


def refusal(a: Analysis) -> str:
    """Why an unbounded query is refused: its violations and adversarial input family."""
    parts = [f"{v.condition}: {v.explanation}"
             + (f" [attributes {', '.join(v.attributes)}]" if v.attributes else "")
             for v in a.violations]
    text = ("query is not bounded-memory computable"
            + (" (not certified bounded)" if a.proof == "not_certified" else "") + ": "
            + "; ".join(parts))
    w = a.witness
    if w is not None:
        text += f"; adversarial input family ({w.condition}, stream {w.stream}): {w.description}"
    return text


def synopsis_source(a: Analysis) -> Source | str:
    """The analysed query and closure to run on synopses, or why there is none."""
    if not a.bounded:
        return refusal(a)
    q, v = a.query, a.verdict
    units = a.synopsis.units
    if q.timestamps and not q.aggregate:
        v = spj_verdict(q)  # timestamps read as integers: Arasu's synopses apply (rule E-a)
        if not v.bounded:
            return DownSets(units)  # rules G1–G3 (bag) or E-b (set)
        units = spj_synopsis(v.spj, v.closure).units
    if q.distinct and not q.aggregate and q.has_self_join and len(v.spj.occs) > 1 \
            and v.closure.sat and fig2(v.spj, v.closure):
        return PerLto(v.spj)  # bounded only after removing redundant occurrences per piece
    return v.spj, v.closure, units


def choose_mode(a: Analysis, source: Source | str, mode: str | None,
                allow_unbounded: bool) -> str:
    """Synopses when possible; the full history only if asked for or allowed."""
    if not a.bounded and not allow_unbounded:
        raise SpjUnbounded(str(source))
    if not isinstance(source, str):
        return mode or SYNOPSIS
    if mode == SYNOPSIS or (mode is None and not allow_unbounded):
        raise SpjUnbounded(source)
    return FULL_HISTORY


def full_spj(q: Query) -> Spj:
    """The whole query (every attribute it reads), as the full-history mode runs it."""
    if q.aggregate:
        return spj_of(q, q.group_by, True, extra=tuple(a.arg for a in q.aggregates if a.arg))
    return spj_of(q, q.projection, not q.distinct)

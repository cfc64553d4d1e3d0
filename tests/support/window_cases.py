"""Helpers shared by the window property tests: a spec's shape fields per kind, the operator of
a spec, and a stream cut into batches."""

from __future__ import annotations

import itertools

import pandas as pd

from engine.windows import (
    CountWindow,
    SessionWindow,
    SlidingWindow,
    TumblingWindow,
    WindowOperator,
    WindowSpec,
)

KINDS = ("tumbling", "sliding", "session", "count")


def shape(kind: str, size: int, slide: int) -> dict[str, int]:
    """The shape fields of a window of ``kind`` (for sessions ``size`` is the gap, for count
    windows ``size`` and ``slide`` count events)."""
    return {"tumbling": {"size_us": size}, "sliding": {"size_us": size, "slide_us": slide},
            "session": {"gap_us": size},
            "count": {"size_events": size, "every_events": slide}}[kind]


def operator(spec: WindowSpec) -> WindowOperator:
    kinds = {"tumbling": TumblingWindow, "sliding": SlidingWindow, "session": SessionWindow,
             "count": CountWindow}
    return kinds[spec.kind](spec)


def split(events: pd.DataFrame, cuts: list[int]) -> list[pd.DataFrame]:
    """Batches of ``events`` at the cut points (repeated cuts give empty batches)."""
    bounds = [0, *cuts, len(events)]
    return [events.iloc[a:b] for a, b in itertools.pairwise(bounds)]

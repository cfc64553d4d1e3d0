"""The estimated work of a shared job's members in their part's task, so that the parts
(:func:`jobs.shared.shared_run.parts`) take about equally long: the job lasts as long as its longest
part, and the queries differ a lot (a pane group of windows over every event costs as much as
a dozen small selects).

The estimate takes the rows entering each query from the plan's statistics (its own predicate's
selectivity; a pane group's events counted once) and the windows or output values it emits.
The weights are microseconds per unit on the development machine, fitted to the shared
benchmark's 32 queries timed one by one (README, Shared replays); only their ratios matter.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Protocol

from engine.sharing import SharedPlan
from engine.sharing.stats import Statistics
from engine.sharing.view import SharingView

#: A query's steps and files over a group of batches, whatever its rows.
MEMBER_US = 35_000.0
#: An event entering an operator (a window's late split and slice partials: once per pane
#: group; any other operator's step).
EVENT_US = 0.3
#: A window emitted: assembled from its slices, closed and written.
WINDOW_US = 0.5
#: A value written by a select (per row: its columns plus two).
VALUE_US = 0.02


class Sharer(Protocol):
    """What the estimate reads of a member of a shared job
    (:class:`jobs.shared.shared_run.Member`)."""

    name: str
    share: object | None  # its pane group's shared panes


def windows_emitted(view: SharingView, rows: float, stats: Statistics) -> float:
    """The windows ``view`` emits over ``rows`` entering events: per key, the recording's span
    over the slide (time windows) or the events over the slide (count windows), and never more
    than the events (a sparse stream leaves most windows empty)."""
    w = view.window
    assert w is not None
    if w.kind == "time":
        return min(rows, stats.key_count(view.key) * stats.span(w.time) / w.slide)
    if w.kind == "count":
        return rows / w.slide
    return rows


def work_of(plan: SharedPlan, selects: Collection[str]) -> Callable[[Sequence[Sharer]], float]:
    """The estimated work (µs) of a unit of members (those sharing panes or a residual filter
    run in one part), from ``plan``'s statistics; ``selects``: the members that are selects
    (their work is writing the rows they keep)."""
    views = {v.name: v for v in plan.views}
    stats = plan.stats

    def work(members: Sequence[Sharer]) -> float:
        total, counted = 0.0, set()
        for m in members:
            view = views[m.name]
            rows = stats.selectivity(view.where) * stats.rows
            total += MEMBER_US
            if m.name in selects:
                total += rows * VALUE_US * (2 + len(view.columns))
                continue
            if m.share is None or id(m.share) not in counted:  # a pane group's events once
                total += rows * EVENT_US
            if m.share is not None:
                counted.add(id(m.share))
            if view.window is not None:
                total += windows_emitted(view, rows, stats) * WINDOW_US
        return total

    return work

"""The estimated work of a shared job's members in their part's task, so that the parts
(:func:`jobs.shared.shared_run.parts`) take about equally long: the job lasts as long as its longest
part, and the queries differ a lot (a pane group of windows over every event costs as much as
a dozen small selects).

Each query's family estimates its step (:meth:`engine.family.QueryFamily.step_work`, in the
units of :mod:`engine.sharing.cost`) from the rows entering it (its own predicate's selectivity
in the plan's statistics); the events of a pane group are counted once, and so are the derived
columns a cluster computes for its members (on every event of the range).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from engine.family import QueryFamily
from engine.sharing import SharedPlan
from engine.sharing.cost import DERIVED_US, MEMBER_US, StepWork


class Computed(Protocol):
    """A cluster's derived columns (:class:`jobs.shared.shared_derive.ClusterDerive`)."""

    @property
    def computed(self) -> int:
        """The columns computed per group of batches."""


class Sharer(Protocol):
    """What the estimate reads of a member of a shared job
    (:class:`jobs.shared.shared_run.Member`)."""

    name: str
    share: object | None  # its pane group's shared panes
    derive: Computed | None  # its cluster's derived columns
    computes: bool  # whether its part computes them for it


def work_of(plan: SharedPlan, families: Mapping[str, QueryFamily]
            ) -> Callable[[Sequence[Sharer]], float]:
    """The estimated work (µs) of a unit of members (those sharing panes or derived columns
    run in one part), from ``plan``'s statistics; ``families``: each member's family."""
    views = {v.name: v for v in plan.views}
    stats = plan.stats
    steps: dict[str, StepWork] = {}

    def step(name: str) -> StepWork:
        if name not in steps:
            view = views[name]
            steps[name] = families[name].step_work(
                view, stats.selectivity(view.where) * stats.rows, stats)
        return steps[name]

    def work(members: Sequence[Sharer]) -> float:
        total, counted = 0.0, set()
        computed = {id(m.derive): m.derive for m in members if m.computes and m.derive}
        total += sum(d.computed for d in computed.values()) * stats.rows * DERIVED_US
        for m in members:
            total += MEMBER_US
            if m.share is None or id(m.share) not in counted:  # a pane group's events once
                total += step(m.name).events
            if m.share is not None:
                counted.add(id(m.share))
            total += step(m.name).output
        return total

    return work

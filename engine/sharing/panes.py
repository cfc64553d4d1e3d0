"""Pane groups: window queries of one cluster that aggregate the same rows into shared tumbling
panes (RELAXWINDOW: the pane is the gcd of the members' sizes and slides), each assembling its
windows from the panes' partial states."""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from ..predicate import Pred
from .cost import alone_operator_cost, pane_group_cost
from .stats import Statistics
from .view import SharingView, WindowView


@dataclass(frozen=True)
class PaneGroup:
    """Members ``queries`` aggregate the rows of their cluster's stream that pass ``where``
    (their common residual predicate) into tumbling panes of ``pane`` units (microseconds for
    time windows, events for count windows) per value of ``key`` (None: one group), keeping
    the partial ``states`` (count windows always keep ``count(*)``: a window is emitted only
    once its last pane is full)."""

    queries: tuple[str, ...]
    kind: str
    pane: int
    key: str | None
    time: str
    lateness_us: int
    where: Pred
    states: tuple[str, ...]


def signature(view: SharingView, residual: Pred) -> tuple:
    """Queries share panes only when these agree: window kind, time column, lateness, key and
    the residual predicate (so the same rows enter the panes)."""
    w = view.window
    assert w is not None
    return (w.kind, w.time, w.lateness_us, view.key or "", residual.sql)


def relax_pane(*sizes: int) -> int:
    """RELAXWINDOW in closed form: the largest pane dividing every size and slide."""
    pane = 0
    for size in sizes:
        pane = gcd(pane, size)
    return pane


def _window(view: SharingView) -> WindowView:
    assert view.window is not None
    return view.window


def group_panes(members: list[SharingView], residuals: dict[str, Pred], rows_in: dict[str, float],
                stats: Statistics) -> tuple[PaneGroup, ...]:
    """The pane groups of a cluster: per signature, greedily (members by size, slide, name)
    join the group whose cost grows least, when that is less than the query's own operator;
    groups of one query are dropped (it runs its own operator)."""
    by_signature: dict[tuple, list[SharingView]] = {}
    for view in members:
        if view.pane_eligible:
            by_signature.setdefault(signature(view, residuals[view.name]), []).append(view)
    groups: list[PaneGroup] = []
    for sig in sorted(by_signature):
        candidates = sorted(by_signature[sig],
                            key=lambda v: (_window(v).size, _window(v).slide, v.name))
        formed: list[tuple[list[SharingView], int]] = []
        for view in candidates:
            w, rows = _window(view), rows_in[view.name]
            alone = alone_operator_cost(view, rows, stats)
            best: tuple[float, int] | None = None
            for i, (group, pane) in enumerate(formed):
                widened = relax_pane(pane, w.size, w.slide)
                delta = pane_group_cost([*group, view], widened, rows, stats) \
                    - pane_group_cost(group, pane, rows, stats)
                if delta < alone and (best is None or (delta, i) < best):
                    best = (delta, i)
            if best is None:
                formed.append(([view], relax_pane(w.size, w.slide)))
            else:
                group, pane = formed[best[1]]
                formed[best[1]] = ([*group, view], relax_pane(pane, w.size, w.slide))
        groups.extend(_pane_group(group, pane, residuals) for group, pane in formed
                      if len(group) > 1)
    return tuple(sorted(groups, key=lambda g: g.queries))


def _pane_group(group: list[SharingView], pane: int, residuals: dict[str, Pred]) -> PaneGroup:
    first, w = group[0], _window(group[0])
    return PaneGroup(queries=tuple(sorted(v.name for v in group)), kind=w.kind, pane=pane,
                     key=first.key, time=w.time, lateness_us=w.lateness_us,
                     where=residuals[first.name],
                     states=tuple(sorted(frozenset().union(*(v.states for v in group))
                                         | ({"count(*)"} if w.kind == "count" else set()))))

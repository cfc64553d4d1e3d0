"""The shared planner: which queries on one recording read one intermediate stream.

:class:`Planner` registers queries one at a time as in the paper: a new query joins the cluster
that it MATCHes (served unchanged) or that the cost model finds cheapest to widen for it (MERGE),
or stands alone; removing a query NARROWs its cluster. :func:`plan_queries` (and
:meth:`Planner.plan`) replan from the set of queries in a canonical order (widest predicate
first, then by name) followed by one pass of local search, so the plan does not depend on the
order of registration.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import RepriseError
from .cluster import Cluster, add_matching, build_cluster, match, merge, narrow
from .plan import SharedPlan
from .stats import Statistics
from .view import SharingView

MATCH, MERGE, NEW = "match", "merge", "new"


class SharingError(RepriseError):
    """Queries that cannot be planned together (e.g. they read different recordings)."""


class Planner:
    """Incremental planning over one recording's queries (``widening`` False: a query joins a
    cluster only when it MATCHes, the paper's plain stream sharing)."""

    def __init__(self, stats: Statistics, widening: bool = True):
        self.stats, self.widening = stats, widening
        self.clusters: list[Cluster] = []
        self.outcomes: dict[str, str] = {}

    @property
    def views(self) -> list[SharingView]:
        return [m for c in self.clusters for m in c.members]

    def register(self, view: SharingView) -> str:
        """Add ``view`` to the current plan; returns how it is served: ``match``, ``merge`` or
        ``new`` (it starts a cluster of its own)."""
        if view.name in self.outcomes:
            raise SharingError(f"query {view.name!r} is already registered")
        alone = build_cluster([view], self.stats)
        best: tuple[float, int, str, Cluster] | None = None
        for i, cluster in enumerate(self.clusters):
            if match(cluster, view):
                candidate, how = add_matching(cluster, view, self.stats), MATCH
            elif self.widening:
                candidate, how = merge(cluster, view, self.stats), MERGE
            else:
                continue
            delta = candidate.cost - cluster.cost
            if delta <= alone.cost and (best is None or (delta, i) < best[:2]):
                best = (delta, i, how, candidate)
        if best is None:
            self.clusters.append(alone)
            how = NEW
        else:
            _, i, how, self.clusters[i] = best
        self.outcomes[view.name] = how
        return how

    def cost(self) -> float:
        return sum(c.cost for c in self.clusters)

    def improve(self, order: list[SharingView]) -> None:
        """One pass of local search in ``order``: take each query out of its cluster (NARROW)
        and register it again; keep the move only when the total cost falls. Undoes greedy
        choices that an earlier, wider query forced (e.g. a query with no predicate that made
        narrow queries join its stream)."""
        for view in order:
            before = (list(self.clusters), dict(self.outcomes), self.cost())
            self.remove(view.name)
            self.register(view)
            if self.cost() >= before[2] * (1 - 1e-9):
                self.clusters, self.outcomes = before[0], before[1]

    def remove(self, name: str) -> Cluster | None:
        """Unregister query ``name``: NARROW its cluster (None when it was alone)."""
        index = next((i for i, c in enumerate(self.clusters) if name in c.names), None)
        if index is None:
            raise SharingError(f"query {name!r} is not registered")
        narrowed = narrow(self.clusters[index], name, self.stats)
        if narrowed is None:
            del self.clusters[index]
        else:
            self.clusters[index] = narrowed
        del self.outcomes[name]
        return narrowed

    def current(self) -> SharedPlan:
        """The plan as registered so far (depends on the registration order)."""
        return SharedPlan.of(self.clusters, self.outcomes, self.stats)

    def plan(self) -> SharedPlan:
        """The canonical plan of the registered queries (independent of the order)."""
        return plan_queries(self.views, self.stats)


def canonical_order(views: Iterable[SharingView], stats: Statistics) -> list[SharingView]:
    """Widest predicate first (so that narrower queries find a stream they MATCH), then by
    name."""
    return sorted(views, key=lambda v: (-stats.selectivity(v.where), v.name))


def plan_queries(views: Iterable[SharingView], stats: Statistics) -> SharedPlan:
    """The shared plan of ``views`` (queries on one recording), whatever their order; it also
    counts how many queries would share a stream without widening (MATCH only)."""
    ordered = canonical_order(views, stats)
    names = [v.name for v in ordered]
    if len(set(names)) != len(names):
        raise SharingError(f"a query is listed twice: {', '.join(sorted(names))}")
    if len({v.recording for v in ordered}) > 1:
        reads = ", ".join(f"{v.name} reads {v.recording!r}" for v in sorted(ordered,
                                                                           key=lambda v: v.name))
        raise SharingError(f"queries of one shared plan must read the same recording: {reads}")
    planner = Planner(stats)
    for view in ordered:
        planner.register(view)
    planner.improve(ordered)

    def match_only() -> int:
        """How many of the queries share a stream when no stream is widened."""
        narrow = Planner(stats, widening=False)
        for view in ordered:
            narrow.register(view)
        narrow.improve(ordered)
        return len(ordered) - len(narrow.clusters)

    return SharedPlan.of(planner.clusters, outcomes(planner.clusters, ordered, stats), stats,
                         match_only)


def outcomes(clusters: list[Cluster], order: list[SharingView], stats: Statistics
             ) -> dict[str, str]:
    """How each query of the final plan is served, replaying each cluster in ``order``: its
    first query is ``new`` (it creates the stream), each later one ``match`` or ``merge``."""
    position = {v.name: i for i, v in enumerate(order)}
    result: dict[str, str] = {}
    for cluster in clusters:
        members = sorted(cluster.members, key=lambda m: position[m.name])
        current = build_cluster([members[0]], stats)
        result[members[0].name] = NEW
        for view in members[1:]:
            if match(current, view):
                result[view.name], current = MATCH, add_matching(current, view, stats)
            else:
                result[view.name], current = MERGE, merge(current, view, stats)
    return result

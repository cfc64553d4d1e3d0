"""Clusters: queries served by one intermediate stream ``σ_W π_C`` of the recording, and the
paper's operations on them: MATCH (a query is served by the stream unchanged), MERGE (widen the
stream for it) and NARROW (rebuild the stream after a query leaves)."""

from __future__ import annotations

from dataclasses import dataclass

from ..predicate import And, InSet, Or, Pred, conjoin, disjoin, implies
from ..predicate import values as V
from ..predicate.form import in_set
from .cost import alone_operator_cost, atoms, own_pane, pane_group_cost, scan_cost
from .derived import SharedColumn, shared_columns
from .panes import PaneGroup, group_panes, signature
from .stats import Statistics
from .view import SharingView


@dataclass(frozen=True)
class Residual:
    """What query ``query`` still does on its own over its cluster's stream: keep the rows
    passing ``where``, then run its own operator, or (in a pane group) assemble its windows
    from the group's panes; ``having`` is always applied here, to its own finalised windows,
    never to shared panes (a filtered fine window cannot feed a coarser one)."""

    query: str
    where: Pred
    having: Pred | None


@dataclass(frozen=True)
class Cluster:
    """``members`` (by name) read the rows passing ``where`` (W), keeping ``columns``; each
    member's ``residuals`` entry is the part of its own predicate W does not imply; window
    members with compatible pre-selection share ``pane_groups``. ``cost``: the cost model's
    estimate of the cluster's work."""

    members: tuple[SharingView, ...]
    where: Pred
    columns: tuple[str, ...]
    residuals: tuple[Residual, ...]
    pane_groups: tuple[PaneGroup, ...]
    cost: float

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.members)

    def residual(self, name: str) -> Residual:
        return next(r for r in self.residuals if r.query == name)

    @property
    def derived(self) -> tuple[SharedColumn, ...]:
        """The derived columns the cluster's stream computes, once per definition."""
        return shared_columns(self.members)

    def pane_group_of(self, name: str) -> int | None:
        return next((i for i, g in enumerate(self.pane_groups) if name in g.queries), None)


def conjuncts(pred: Pred) -> tuple[Pred, ...]:
    return pred.operands if isinstance(pred, And) else (pred,)


def residual_predicate(where: Pred, widened: Pred) -> Pred:
    """``where`` without the conjuncts ``widened`` implies (sound: ``widened`` AND the result
    passes exactly the rows ``where`` passes, given that ``where`` implies ``widened``)."""
    return conjoin(*(c for c in conjuncts(where) if not implies(widened, c)))


#: Atoms W may have before RELAX replaces it by its hull (see :func:`hull`).
MAX_WIDENED_ATOMS = 32


def hull(pred: Pred) -> Pred:
    """A conjunction implied by ``pred`` (sound as a shared W, never used as a residual): per
    column constrained by a value set in every disjunct, the one interval from the least lower
    bound to the greatest upper bound of those sets."""
    boxes = []
    for disjunct in pred.operands if isinstance(pred, Or) else (pred,):
        boxes.append({a.column: a for a in conjuncts(disjunct) if isinstance(a, InSet)})
    bounds = []
    for column in sorted(set.intersection(*(set(b) for b in boxes))):
        ctype = boxes[0][column].ctype
        values = V.normalise(ctype, [iv for b in boxes for iv in b[column].values])
        first, last = values[0], values[-1]
        bounds.append(in_set(column, ctype, (V.Interval(first.lo, first.lo_closed, last.hi,
                                                        last.hi_closed),)))
    return conjoin(*bounds)


def relax(*preds: Pred) -> Pred:
    """RELAX: the simplified OR of ``preds``, or its hull when it has more than
    :data:`MAX_WIDENED_ATOMS` atoms."""
    widened = disjoin(*preds)
    return hull(widened) if atoms(widened) > MAX_WIDENED_ATOMS else widened


def build_cluster(members: list[SharingView], stats: Statistics,
                  where: Pred | None = None) -> Cluster:
    """The cluster serving ``members``: W is ``where`` if given (it must be implied by every
    member's predicate), else RELAX of the members' predicates. Built once per members and W
    for ``stats`` (planning builds the same cluster again as it tries and undoes moves)."""
    ordered = sorted(members, key=lambda m: m.name)
    # by the members' identities (cheaper to hash than the views; the entry keeps the views
    # alive, so an identity is not reused while it is cached)
    key = (tuple(map(id, ordered)), where)
    if key not in stats.clusters:
        stats.clusters[key] = (ordered, _build(ordered, stats, where))
    return stats.clusters[key][1]


def _build(ordered: list[SharingView], stats: Statistics, where: Pred | None) -> Cluster:
    widened = relax(*(m.where for m in ordered)) if where is None else where
    known = stats.residuals  # (planning asks again for each cluster it tries)
    for m in ordered:
        if (m.where, widened) not in known:
            known[m.where, widened] = residual_predicate(m.where, widened)
    residuals = {m.name: known[m.where, widened] for m in ordered}
    rows_in = {m.name: stats.selectivity(m.where) * stats.rows for m in ordered}
    groups = group_panes(ordered, residuals, rows_in, stats)
    grouped = {q for g in groups for q in g.queries}
    columns = tuple(sorted(frozenset().union(*(m.columns for m in ordered))))
    cost = scan_cost(widened, len(columns), [atoms(r) for r in residuals.values()], stats,
                     len({d.digest for m in ordered for d in m.derived}))
    cost += sum(pane_group_cost([m for m in ordered if m.name in g.queries], g.pane,
                                rows_in[g.queries[0]], stats) for g in groups)
    cost += sum(alone_operator_cost(m, rows_in[m.name], stats) for m in ordered
                if m.name not in grouped)
    return Cluster(members=tuple(ordered), where=widened, columns=columns,
                   residuals=tuple(Residual(m.name, residuals[m.name], m.having)
                                   for m in ordered),
                   pane_groups=groups, cost=cost)


def match(cluster: Cluster, view: SharingView) -> bool:
    """MATCH: ``view`` is served by the cluster's stream as it is: its predicate implies W, it
    reads no column the stream drops, and, if its windows can use panes, the panes (or slices)
    its signature already has serve it: an existing pane group's pane, or else the slices
    (gcd of size and slide) of an ungrouped member of its signature, divides its size and
    slide and keeps the states it needs; with no member of its signature, it runs its own
    operator."""
    if not implies(view.where, cluster.where) or not view.columns <= set(cluster.columns):
        return False
    if not view.pane_eligible:
        return True
    assert view.window is not None
    size, slide = view.window.size, view.window.slide
    sig = signature(view, residual_predicate(view.where, cluster.where))
    peers = [m for m in cluster.members
             if m.pane_eligible and signature(m, cluster.residual(m.name).where) == sig]
    if not peers:
        return True
    served = [(g.pane, set(g.states)) for g in cluster.pane_groups if g.queries[0] in
              {p.name for p in peers}]
    grouped = {q for g in cluster.pane_groups for q in g.queries}
    served += [(own_pane(p), set(p.states)) for p in peers if p.name not in grouped]
    return any(size % pane == 0 and slide % pane == 0 and view.states <= states
               for pane, states in served)


def add_matching(cluster: Cluster, view: SharingView, stats: Statistics) -> Cluster:
    """The cluster serving ``view`` too, its stream unchanged (``view`` must :func:`match`)."""
    return build_cluster([*cluster.members, view], stats, where=cluster.where)


def merge(cluster: Cluster, view: SharingView, stats: Statistics) -> Cluster:
    """MERGE: the cluster widened for ``view``: W becomes RELAX(W, view's predicate), the
    columns their union, and the pane groups are re-formed (their panes relaxed)."""
    return build_cluster([*cluster.members, view], stats, where=relax(cluster.where, view.where))


def narrow(cluster: Cluster, name: str, stats: Statistics) -> Cluster | None:
    """NARROW: the cluster without query ``name``, its stream rebuilt from the remaining
    members only (None when none remain)."""
    rest = [m for m in cluster.members if m.name != name]
    return build_cluster(rest, stats) if rest else None

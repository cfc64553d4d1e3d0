"""Executing a shared plan in memory over one frame of a recording (pure pandas): the rows
each query's own work receives, and the windows of the pane-group members. A runner does the
same per batch; tests check it against each query evaluated on its own."""

from __future__ import annotations

import pandas as pd

from .partials import pane_partials, windows_from_panes
from .plan import SharedPlan


def shared_inputs(plan: SharedPlan, frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Query name -> the rows of ``frame`` its own work receives: those passing its cluster's
    W (computed once per cluster), then its residual predicate, with the columns it reads."""
    out = {}
    for cluster in plan.clusters:
        stream = frame.loc[cluster.where.evaluate(frame), list(cluster.columns)]
        for member, residual in zip(cluster.members, cluster.residuals, strict=True):
            rows = stream.loc[residual.where.evaluate(stream)]
            out[member.name] = rows[sorted(member.columns)]
    return out


def pane_outputs(plan: SharedPlan, frame: pd.DataFrame, order: tuple[str, ...] = ()
                 ) -> dict[str, pd.DataFrame]:
    """Query name -> its windows assembled from its pane group's partials (computed once per
    group over the cluster's rows passing the group's predicate), its ``having`` applied (from
    its residual); ``order``: the arrival columns breaking event-time ties for count panes."""
    out = {}
    for cluster in plan.clusters:
        stream = frame.loc[cluster.where.evaluate(frame)]
        for group in cluster.pane_groups:
            rows = stream.loc[group.where.evaluate(stream)]
            partials = pane_partials(rows, kind=group.kind, pane=group.pane, key=group.key,
                                     time=group.time, states=group.states, order=order)
            for name in group.queries:
                view = next(m for m in cluster.members if m.name == name)
                assert view.window is not None
                windows = windows_from_panes(partials, kind=group.kind, pane=group.pane,
                                             size=view.window.size, slide=view.window.slide,
                                             aggregates=view.aggregates)
                having = cluster.residual(name).having
                if having is not None:
                    windows = windows.loc[having.evaluate(windows)].reset_index(drop=True)
                out[name] = windows
    return out

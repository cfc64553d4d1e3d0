"""A shared plan: its clusters, each query's residual work, the cost model's estimates, its
canonical JSON form and the plan hash."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from .cluster import Cluster, build_cluster
from .cost import standalone_cost
from .panes import PaneGroup
from .stats import Statistics
from .view import PARTIALS, SharingView

_UNITS = (("d", 86_400_000_000), ("h", 3_600_000_000), ("m", 60_000_000), ("s", 1_000_000),
          ("ms", 1_000), ("us", 1))


def duration_text(us: int) -> str:
    """``us`` microseconds in the largest unit that divides it: ``5s``, ``90s``, ``250ms``."""
    if us == 0:
        return "0s"
    for unit, size in _UNITS:
        if us % size == 0:
            return f"{us // size}{unit}"
    raise AssertionError("unreachable: 1us divides every duration")


def pane_text(kind: str, pane: int) -> str | int:
    """A pane size as the plan shows it: a duration for time windows, a count of events."""
    return duration_text(pane) if kind == "time" else pane


def finalisation(fn: str, column: str | None) -> str:
    """How a decomposable aggregate is finalised from the merged partial states."""
    arg = "*" if column is None else column
    if fn == "avg":
        return f"sum({arg}) / count({arg})"  # the non-null count: NULLs are not averaged
    assert fn in PARTIALS
    return f"{fn}({arg})"


def _pane_group_json(group: PaneGroup) -> dict[str, Any]:
    return {"queries": list(group.queries), "kind": group.kind,
            "pane": pane_text(group.kind, group.pane), "key": group.key, "time": group.time,
            "lateness": duration_text(group.lateness_us), "where": group.where.sql,
            "states": list(group.states)}


def _residual_json(view: SharingView, index: int, cluster: Cluster) -> dict[str, Any]:
    group_index = cluster.pane_group_of(view.name)
    residual = cluster.residual(view.name)
    out: dict[str, Any] = {
        "cluster": index, "where": residual.where.sql,
        "columns": sorted(view.columns), "operator": "own", "pane_group": None,
        "having": None if residual.having is None else residual.having.sql}
    if group_index is not None:
        group, w = cluster.pane_groups[group_index], view.window
        assert w is not None
        out.update(operator="panes", pane_group=group_index,
                   panes_per_window=w.size // group.pane, panes_per_slide=w.slide // group.pane,
                   aggregates={a.name: finalisation(a.fn, a.column) for a in view.aggregates})
    return out


@dataclass(frozen=True, eq=False)
class SharedPlan:
    """Clusters (by their first query's name), the outcome of each query's registration
    (``match``, ``merge``, ``new``) and the statistics the estimates came from."""

    clusters: tuple[Cluster, ...]
    outcomes: dict[str, str]
    stats: Statistics
    #: How many of the queries would share a stream with MATCH only (no widening), computed
    #: when first asked (a second planner's work, which a shared run itself does not need).
    match_only: Callable[[], int] | None = None

    @classmethod
    def of(cls, clusters: Sequence[Cluster], outcomes: dict[str, str], stats: Statistics,
           match_only: Callable[[], int] | None = None) -> SharedPlan:
        return cls(tuple(sorted(clusters, key=lambda c: c.names)), dict(outcomes), stats,
                   match_only)

    @cached_property
    def shared_match_only(self) -> int | None:
        return self.match_only() if self.match_only is not None else None

    @property
    def views(self) -> list[SharingView]:
        return sorted((m for c in self.clusters for m in c.members), key=lambda v: v.name)

    def cluster_of(self, name: str) -> Cluster:
        return next(c for c in self.clusters if name in c.names)

    def structure(self) -> dict[str, Any]:
        """The plan without estimates: what the plan hash covers."""
        clusters = [{"queries": list(c.names), "where": c.where.sql, "columns": list(c.columns),
                     "pane_groups": [_pane_group_json(g) for g in c.pane_groups],
                     **({"derived": [d.to_json() for d in c.derived]} if c.derived else {})}
                    for c in self.clusters]
        residuals = {m.name: _residual_json(m, i, c)
                     for i, c in enumerate(self.clusters) for m in c.members}
        return {"clusters": clusters, "residuals": dict(sorted(residuals.items()))}

    @property
    def plan_hash(self) -> str:
        """sha256 of the canonical JSON of :meth:`structure`."""
        text = json.dumps(self.structure(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def estimates(self) -> dict[str, Any]:
        """The cost model's estimates for the shared plan and for standalone runs."""
        stats, n = self.stats, self.stats.rows
        views = self.views
        entering = sum(len(c.members) * stats.selectivity(c.where) * n for c in self.clusters)
        return {
            "rows": n,
            "scans": len(self.clusters),
            "rows_read": {"shared": len(self.clusters) * n, "standalone": len(views) * n},
            "rows_entering_queries": {"shared": round(entering), "standalone": len(views) * n},
            "cost": {"shared": round(sum(c.cost for c in self.clusters)),
                     "standalone": round(sum(standalone_cost(v, stats) for v in views))},
            "clusters": [{"queries": list(c.names),
                          "selectivity": round(stats.selectivity(c.where), 6),
                          "cost": round(c.cost)} for c in self.clusters],
            "queries": {v.name: self._query_estimates(v) for v in views},
        }

    def _query_estimates(self, view: SharingView) -> dict[str, float]:
        """A query's selectivity, its cost alone (its own scan) and what it adds to its
        cluster (the cluster's cost minus that of the cluster narrowed without it): it shares
        because the second is not above the first."""
        cluster = self.cluster_of(view.name)
        rest = [m for m in cluster.members if m.name != view.name]
        without = build_cluster(rest, self.stats).cost if rest else 0.0
        return {"selectivity": round(self.stats.selectivity(view.where), 6),
                "alone": round(standalone_cost(view, self.stats)),
                "in_cluster": round(cluster.cost - without)}

    def counters(self) -> dict[str, int | None]:
        """How the queries were served: MATCH, widened (MERGE), NEW (each cluster's first
        query, which starts its stream); how many would share a stream with MATCH only (no
        widening); the pane groups (each computes its panes once per batch) and the windows
        assembled from them; the derived columns the queries read and those the clusters
        compute (once per definition and cluster; constants are added as events are read)."""
        count = {how: sum(1 for o in self.outcomes.values() if o == how)
                 for how in ("match", "merge", "new")}
        groups = [g for c in self.clusters for g in c.pane_groups]
        return {**count, "shared_with_widening": count["match"] + count["merge"],
                "shared_match_only": self.shared_match_only,
                "pane_groups": len(groups),
                "windows_from_panes": sum(len(g.queries) for g in groups),
                "derived_columns_read": sum(len(v.derived) for v in self.views),
                "derived_columns_computed": sum(1 for c in self.clusters for d in c.derived
                                                if not d.constant)}

    def describe(self) -> str:
        """The plan as text for people: clusters, pane groups, residuals, estimates, counters."""
        data, estimates = self.to_json(), self.estimates()
        lines = [f"plan {data['plan_hash']}"]
        for i, (cluster, est) in enumerate(zip(data["clusters"], estimates["clusters"],
                                               strict=True)):
            lines += [f"cluster {i}: {', '.join(cluster['queries'])} (selectivity "
                      f"{est['selectivity']:.4g}, cost {est['cost']:,})",
                      f"  where   {cluster['where']}",
                      f"  columns {', '.join(cluster['columns'])}"]
            for d in cluster.get("derived", []):
                how = "a constant added as events are read" if d["constant"] else \
                    "computed once"
                lines.append(f"  derived {', '.join(d['columns'])} = {d['sql']} ({d['type']}), "
                             f"{how} for {', '.join(d['queries'])}")
            for j, g in enumerate(cluster["pane_groups"]):
                lines.append(f"  panes {j}: {g['pane']} {g['kind']} panes by "
                             f"{g['key'] or '(one group)'} keeping {', '.join(g['states'])}: "
                             f"{', '.join(g['queries'])}")
        for name, r in data["residuals"].items():
            work = (f"panes {r['pane_group']} ({r['panes_per_window']} per window, "
                    f"{r['panes_per_slide']} per slide)" if r["operator"] == "panes"
                    else "its own operator")
            having = f", then having {r['having']}" if r["having"] else ""
            q = estimates["queries"][name]
            lines.append(f"{name}: cluster {r['cluster']}, where {r['where']}, {work}{having}; "
                         f"cost {q['in_cluster']:,} shared vs {q['alone']:,} alone")
        cost, counters = estimates["cost"], data["counters"]
        entering = estimates["rows_entering_queries"]
        lines += [f"rows read {estimates['rows_read']['shared']:,} shared vs "
                  f"{estimates['rows_read']['standalone']:,} standalone; rows entering the "
                  f"queries {entering['shared']:,} vs {entering['standalone']:,}; cost "
                  f"{cost['shared']:,} vs {cost['standalone']:,}",
                  f"served: {counters['match']} match, {counters['merge']} merge (widened W), "
                  f"{counters['new']} new (starts a stream); without widening "
                  f"{counters['shared_match_only']} would share; {counters['pane_groups']} "
                  f"pane group(s) serve {counters['windows_from_panes']} window queries; "
                  f"derived columns: {counters['derived_columns_read']} read, "
                  f"{counters['derived_columns_computed']} computed"]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The plan as JSON: ``plan_hash``, ``clusters`` (queries, where, columns, pane
        groups), ``residuals`` (query -> its own remaining work), ``estimates``, ``counters``."""
        return {"plan_hash": self.plan_hash, **self.structure(),
                "estimates": self.estimates(), "counters": self.counters()}

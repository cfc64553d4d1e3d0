"""Shared replays: planning many queries on one recording as one pass (clusters reading a
widened intermediate stream, pane groups, per-query residual work); see README.md here."""

from .cluster import Cluster, Residual, build_cluster, match, merge, narrow
from .panes import PaneGroup
from .plan import SharedPlan
from .planner import Planner, SharingError, plan_queries
from .stats import Statistics
from .view import AggregateView, SharingView, WindowView

__all__ = ["AggregateView", "Cluster", "PaneGroup", "Planner", "Residual", "SharedPlan",
           "SharingError", "SharingView", "Statistics", "WindowView", "build_cluster", "match",
           "merge", "narrow", "plan_queries"]

"""The cost model: estimated work, in row operations, of a cluster, of a pane group and of a
query standing alone (the formulas are documented in ``engine/sharing/README.md``), and the
estimated time, in microseconds, of a query's step in a shared job (:class:`StepWork`, which
the runner balances its parts by).

Units of the planner's costs: reading one column of one row is 1; evaluating one predicate atom
(one interval of a value set, or IS NULL) on one row is 1; a row entering a residual, a query's
operator or a pane's partial states is 1; one pane (or slice) emitted per key is 1 and merging
one pane into one window is 1.

The weights of :class:`StepWork` are microseconds per unit, fitted (least squares, CPU time)
to the shared benchmark's 32 queries (``--variant derived``, 1M events, ten batches) timed one
by one in a shared job; only their ratios matter.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from ..predicate import And, Const, InSet, Or, Pred
from .stats import Statistics
from .view import PANE_KINDS, SharingView, WindowView

#: A query's steps and files over a group of batches, whatever its rows.
MEMBER_US = 35_000.0
#: An event entering an operator (any operator's step but a time window's; also what the
#: runner weighs a run's events by when it chooses where to run it).
EVENT_US = 0.3
#: A time window's late split and slice partials over a group of batches, whatever its rows,
#: and per event entering it (once per pane group).
PANES_US = 30_000.0
PANE_EVENT_US = 0.15
#: A window emitted: assembled from its slices, closed and written.
WINDOW_US = 0.25
#: A value written by a select (per row: its columns plus two).
VALUE_US = 0.01
#: A derived column computed on an event (once per cluster and definition, on every event of
#: the range; a ``lag`` and a ``CASE`` column of the shared benchmark measured alike).
DERIVED_US = 0.03


@dataclass(frozen=True)
class StepWork:
    """The estimated time (µs) of one query's step in a shared job, besides
    :data:`MEMBER_US`: ``events``, the work on the events entering it (done once for all the
    members of a pane group), and ``output``, the work on what it emits."""

    events: float
    output: float = 0.0


def atoms(pred: Pred) -> int:
    """The number of comparisons evaluating ``pred`` on a row takes."""
    if isinstance(pred, Const):
        return 0
    if isinstance(pred, InSet):
        return len(pred.values)
    if isinstance(pred, (And, Or)):
        return sum(atoms(o) for o in pred.operands)
    return 1


def extent_per_key(w: WindowView, keys: float, rows_in: float, stats: Statistics) -> float:
    """What one key's windows cover: the recording's event-time span (time windows, in
    microseconds) or the key's share of the ``rows_in`` events (count windows)."""
    return stats.span(w.time) if w.kind == "time" else rows_in / keys


def windows_emitted(view: SharingView, rows: float, stats: Statistics) -> float:
    """The windows ``view`` emits over ``rows`` entering events: per key, its extent over the
    slide (:func:`extent_per_key`), never more than the events (a sparse stream leaves most
    windows empty); a window that is not made of panes (a session) counts one per event."""
    w = view.window
    assert w is not None
    if w.kind not in PANE_KINDS:
        return rows
    keys = stats.key_count(view.key)
    return min(rows, keys * extent_per_key(w, keys, rows, stats) / w.slide)


def window_work(view: SharingView, pane: int, rows_in: float, stats: Statistics) -> float:
    """Assembling ``view``'s windows from panes of ``pane`` units over ``rows_in`` rows: the
    panes each key emits plus the panes merged into each window."""
    w = view.window
    assert w is not None
    keys = stats.key_count(view.key)
    extent = extent_per_key(w, keys, rows_in, stats)
    windows = keys * extent / w.slide
    return keys * extent / pane + windows * (w.size / pane)


def own_pane(view: SharingView) -> int:
    """The slice width a window query uses on its own: gcd(size, slide)."""
    w = view.window
    assert w is not None
    return gcd(w.size, w.slide)


def alone_operator_cost(view: SharingView, rows_in: float, stats: Statistics) -> float:
    """The rows entering ``view``'s own operator, plus its window assembly when it is a pane
    kind of window (other operators: the rows only)."""
    if view.pane_eligible:
        return rows_in + window_work(view, own_pane(view), rows_in, stats)
    return rows_in


def pane_group_cost(members: list[SharingView], pane: int, rows_in: float,
                    stats: Statistics) -> float:
    """Rows entering the shared panes once, the panes emitted once, and each member's merges."""
    first = members[0]
    keys = stats.key_count(first.key)
    w = first.window
    assert w is not None
    extent = extent_per_key(w, keys, rows_in, stats)
    merges = sum(keys * extent / m.window.slide * (m.window.size / pane)  # type: ignore[union-attr]
                 for m in members)
    return rows_in + keys * extent / pane + merges


def scan_cost(where: Pred, columns: int, residual_atoms: list[int], stats: Statistics,
              derived: int = 0) -> float:
    """A scan of the recording for one cluster: reading its ``columns`` of every row, computing
    its ``derived`` columns (distinct definitions) on every row, evaluating W on every row,
    then each member's residual on every row of the intermediate stream (the row entering the
    residual costs 1, each atom of the residual 1). The members' operators are counted
    separately."""
    n = stats.rows
    kept = stats.selectivity(where) * n
    return (n * columns + n * derived + n * atoms(where)
            + kept * sum(1 + a for a in residual_atoms))


def standalone_cost(view: SharingView, stats: Statistics) -> float:
    """A query on its own: its own scan (its columns of every row, its predicate on every row,
    the passing rows handed on) and its operator."""
    rows_in = stats.selectivity(view.where) * stats.rows
    return scan_cost(view.where, len(view.columns), [0], stats,
                     len({d.digest for d in view.derived})) \
        + alone_operator_cost(view, rows_in, stats)

"""How window queries share a scan: the window and aggregates the shared planner sees of a
window spec, the pane computation a pane group's tumbling and sliding windows share, and the
estimated work of a window's step (the hooks of :class:`~engine.windows.family.WindowFamily`)."""

from __future__ import annotations

from ..operator import KeyedOperator
from ..sharing import AggregateView, PaneGroup, SharingView, Statistics, WindowView
from ..sharing.cost import (
    EVENT_US,
    PANE_EVENT_US,
    PANES_US,
    WINDOW_US,
    StepWork,
    windows_emitted,
)
from .pane_share import PaneShare, shareable_window
from .spec import WindowSpec


def window_view(spec: WindowSpec, time: str) -> tuple[WindowView, tuple[AggregateView, ...]]:
    """The window and aggregates of ``spec`` as the planner sees them: tumbling and sliding
    windows are time windows, count windows count windows, sessions ``other``; user-declared
    aggregates are holistic here."""
    if spec.kind in ("tumbling", "sliding"):
        shape = WindowView("time", spec.size_us, spec.slide, time, spec.lateness_us, spec.emit)
    elif spec.kind == "count":
        shape = WindowView("count", spec.size_events, spec.every_events, time, spec.lateness_us,
                           spec.emit)
    else:
        shape = WindowView("other", spec.gap_us, spec.gap_us, time, spec.lateness_us, spec.emit)
    aggregates = tuple(AggregateView(a.name, a.fn if spec.udaf(a.fn) is None else f"udaf:{a.fn}",
                                     a.column) for a in spec.aggregates)
    return shape, aggregates


def share_panes(group: PaneGroup, operators: dict[str, KeyedOperator]) -> dict[str, PaneShare]:
    """One :class:`PaneShare` for the members of a time pane group whose operators take their
    slices from panes (:func:`~engine.windows.pane_share.shareable_window`), when there are at
    least two of them; none otherwise."""
    windows = {q: shareable_window(op) for q, op in operators.items()}
    members = [q for q, window in windows.items() if window is not None]
    if group.kind != "time" or len(members) < 2:
        return {}
    share = PaneShare.of(group.pane, [windows[q] for q in members])  # type: ignore[misc]
    return dict.fromkeys(members, share)


def window_step_work(view: SharingView, rows: float, stats: Statistics) -> StepWork:
    """A window's step: its late split and slice partials (a pane group's once), and the
    windows it emits."""
    assert view.window is not None
    events = PANES_US + rows * PANE_EVENT_US if view.window.kind == "time" else rows * EVENT_US
    return StepWork(events=events, output=windows_emitted(view, rows, stats) * WINDOW_US)

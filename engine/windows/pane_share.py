"""Pane sharing between the window operators of a pane group (engine/sharing's plan) that step
the same events in one worker.

Members of a pane group see the same rows (one residual predicate), with the same key, time
column and lateness, so the row-level part of their steps is the same: the late split and the
partial aggregates of the on-time events. :class:`PaneShare` does that part once per batch, into
tumbling panes of the group's pane width (which divides every member's slice width) and with
the union of the members' partials; each :class:`PaneMember` rolls the panes up into its own
slices and goes on with its own merge, window closing and state, so its output, late events and
state are those of its operator run alone. Only partials whose merge is exact (counts, integer
sums, min, max) are shared, so the roll-up changes no value.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..filtered import WrappedOperator
from ..lateness import Arrivals, Marks, split_batch
from ..operator import SEQ, KeyedOperator, StepResult
from .having import HavingOperator
from .one_group import OneGroup
from .partials import Count, Extreme, Partial, Sum
from .segments import Columns, Segments
from .sliding import SlidingWindow
from .time_window import CODE, TimeWindow, slice_partials
from .tumbling import TumblingWindow


def shareable_window(op: KeyedOperator) -> TimeWindow | None:
    """The window operator of ``op`` (itself, or behind its ``having:`` or ``key: none``) when
    it can take its slices from shared panes: a tumbling or sliding window whose partials all
    merge exactly."""
    window = op.inner if isinstance(op, OneGroup) else op
    window = window.inner if isinstance(window, HavingOperator) else window
    if isinstance(window, (TumblingWindow, SlidingWindow)) and all(
            isinstance(p, (Count, Extreme)) or (isinstance(p, Sum) and p.exact)
            for p in window.plan.partials):
        return window
    return None


def with_share(op: KeyedOperator, share: PaneShare) -> KeyedOperator:
    """``op`` (see :func:`shareable_window`) with its window fed from ``share``."""
    window = shareable_window(op)
    if window is None:
        raise ValueError(f"operator {op.name} cannot take its slices from shared panes")
    member: KeyedOperator = PaneMember(window, share)
    having = op.inner if isinstance(op, OneGroup) else op
    if isinstance(having, HavingOperator):
        member = HavingOperator(member, having.having)
    return OneGroup(member) if isinstance(op, OneGroup) else member


@dataclass
class PaneShare:
    """The late split and pane partials of each batch, computed for the first member that steps
    it and reused by the others (see the module docstring)."""

    pane: int
    key: str
    lateness_us: int
    partials: list[Partial]
    columns: list[str]
    _done: dict[tuple, tuple[Marks, Arrivals, Columns]] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, pane: int, members: list[TimeWindow]) -> PaneShare:
        """The share of ``members`` (pane-shareable, one key and lateness) with pane width
        ``pane`` (microseconds, dividing each member's slice width)."""
        first = members[0]
        partials: dict[str, Partial] = {}
        for op in members:
            if (op.key, op.spec.lateness_us) != (first.key, first.spec.lateness_us):
                raise ValueError(f"{op.name} and {first.name} differ in key or lateness: they "
                                 "cannot share panes")
            if op.slice_us % pane:
                raise ValueError(f"pane {pane} us does not divide the slices of {op.name}")
            for p in op.plan.partials:
                partials[p.name] = partials[p.name].union(p) if p.name in partials else p
        columns = sorted({c for op in members for c in op.event_columns})
        return cls(pane, first.key, first.spec.lateness_us, list(partials.values()), columns)

    def reset(self) -> None:
        """Forget the batches seen (a worker starts a new bucket)."""
        self._done.clear()

    def member(self, op: KeyedOperator) -> KeyedOperator:
        """``op`` with its window fed from these panes (:func:`with_share`)."""
        return with_share(op, self)

    def arrivals(self, batch: pd.DataFrame, prior: Marks) -> tuple[Arrivals, Columns]:
        """The late split of ``batch`` after ``prior`` and its on-time events' pane partials."""
        seq = batch[SEQ].to_numpy(dtype="int64")
        ident = (len(seq), int(seq[0]), int(seq[-1]), int(seq.sum()))
        done = self._done.get(ident)
        if done is not None and _same(done[0], prior):
            return done[1], done[2]
        arrivals = split_batch(batch, prior, self.key, self.lateness_us, self.columns)
        panes = slice_partials(arrivals.on_time, arrivals.code, self.pane, self.partials)
        self._done[ident] = (prior, arrivals, panes)
        return arrivals, panes


def _same(a: Marks, b: Marks) -> bool:
    return (np.array_equal(a.keys, b.keys) and np.array_equal(a.before, b.before)
            and np.array_equal(a.after, b.after))


class PaneMember(WrappedOperator):
    """A pane group member: ``inner`` stepping with its slices rolled up from ``share``'s
    panes (its results are those of ``inner`` alone)."""

    def __init__(self, inner: TimeWindow, share: PaneShare):
        super().__init__(inner)
        self.share = share
        self.window = inner

    def step(self, state: pd.DataFrame, batch: pd.DataFrame) -> StepResult:
        op = self.window
        if batch.empty:
            return op.step(state, batch)
        rows, prior = op.split_state(state)
        arrivals, panes = self.share.arrivals(batch, prior)
        return op.advance(rows, arrivals, self._slices(panes))

    def _slices(self, panes: Columns) -> Columns:
        """The panes rolled up into this member's slices, in (key, slice start) order."""
        op = self.window
        if op.slice_us == self.share.pane:  # the panes are its slices (arrays only read)
            return {CODE: panes[CODE], "window_start": panes["window_start"],
                    "max_t": panes["window_start"], **{c: panes[c] for c in op.plan.columns()}}
        starts = panes["window_start"] - np.mod(panes["window_start"], op.slice_us)
        code = panes[CODE]  # (in key and pane order: a slice's panes are a run, no sort)
        seg = Segments.runs(np.arange(len(code)),
                            np.r_[True, (code[1:] != code[:-1]) | (starts[1:] != starts[:-1])]
                            if len(code) else np.zeros(0, bool))
        rows = {CODE: seg.first(panes[CODE]), "window_start": seg.first(starts),
                "max_t": seg.first(starts)}
        rows.update(op.plan.merge(panes, seg))
        return rows

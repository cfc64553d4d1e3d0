"""Batch plans: how the arrival-ordered input is cut into micro-batches, read from a query
file's ``batch:`` block (:func:`parse_batch`) or a ``--plan`` value (:func:`parse_plan`).

Every plan resolves to cut points on the arrival sequence (:func:`resolve_cuts`): batch ``i``
holds the events with ``cuts[i] <= __seq < cuts[i + 1]``. Cut points may repeat (empty batches).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .errors import RepriseError
from .specs import BatchSpec, CatalogError, check_fields, parse_duration_us

PLAN_HELP = ("commit | rows:N | time:DURATION (e.g. time:1h) | cuts:S1,S2,... "
             "(arrival sequence numbers)")


class PlanError(RepriseError):
    """A batch plan that cannot be used; the message says what is expected."""


#: Above this many batches a plan is accepted with a warning (each batch commits five tables).
MANY_BATCHES = 10_000


def batch_count_warning(batches: int, plan: str) -> str | None:
    """A one-line warning when a plan cuts the input into more than :data:`MANY_BATCHES`."""
    if batches <= MANY_BATCHES:
        return None
    return (f"plan {plan} cuts the input into {batches:,} batches (more than "
            f"{MANY_BATCHES:,}): every batch is a Delta commit of each run table; a coarser "
            "plan is much faster")


@dataclass(frozen=True)
class InputFile:
    """A data file of the pinned snapshot and the arrival sequence of its first row."""

    uri: str
    commit_version: int
    rows: int
    offset: int


#: ``batch.by`` -> the fields of a catalog batch plan of that kind.
_BATCH_FIELDS = {"commit": ("by",), "rows": ("by", "rows"), "time": ("by", "every")}


def parse_batch(value: Any, source: str) -> BatchSpec:
    """A query file's ``batch:`` block (None: by commit); a problem raises a CatalogError
    naming the field."""
    if value is None:
        return BatchSpec()
    if not isinstance(value, dict) or "by" not in value:
        raise CatalogError(source, "batch", "expected a mapping such as {by: commit}, "
                           "{by: rows, rows: 1000} or {by: time, every: 1h}")
    by = value["by"]
    if isinstance(by, str) and by in _BATCH_FIELDS:
        check_fields(value, _BATCH_FIELDS[by], source, "batch")
    if by == "commit":
        return BatchSpec()
    if by == "rows":
        rows = value.get("rows")
        if not isinstance(rows, int) or isinstance(rows, bool) or rows <= 0:
            raise CatalogError(source, "batch.rows", f"expected a positive integer, got {rows!r}")
        return BatchSpec(by="rows", rows=rows)
    if by == "time":
        if not isinstance(value.get("every"), str):
            raise CatalogError(source, "batch.every", "expected a duration with a unit such as "
                               f"'10s' or '1h', got {value.get('every')!r}")
        every = parse_duration_us(value.get("every", ""), source=source, fieldname="batch.every")
        if every <= 0:
            raise CatalogError(source, "batch.every", "must be positive")
        return BatchSpec(by="time", interval_us=every)
    raise CatalogError(source, "batch.by", f"expected commit, rows or time, got {by!r}")


def parse_plan(text: str) -> BatchSpec:
    """Parse a ``--plan`` value; a bad value raises PlanError that says what is expected."""
    kind, _, arg = text.strip().partition(":")
    try:
        if kind == "commit" and not arg:
            return BatchSpec()
        if kind == "rows":
            rows = int(arg)
            if rows <= 0:
                raise ValueError
            return BatchSpec(by="rows", rows=rows)
        if kind == "time":
            interval = parse_duration_us(arg, source="--plan", fieldname="time")
            if interval <= 0:
                raise ValueError
            return BatchSpec(by="time", interval_us=interval)
        if kind == "cuts":
            cuts = tuple(int(c) for c in arg.split(",") if c.strip()) if arg else ()
            if any(c < 0 for c in cuts) or list(cuts) != sorted(cuts):
                raise ValueError
            return BatchSpec(by="cuts", cuts=cuts)
    except (ValueError, CatalogError):
        pass
    raise PlanError(f"invalid batch plan {text!r}; expected {PLAN_HELP}")


def commit_cuts(files: list[InputFile], total: int) -> list[int]:
    """One batch per source commit (commits that added no rows give empty batches); one pass
    over the files (a followed recording gains a file with every commit)."""
    starts: dict[int, int] = {}
    for f in files:
        starts[f.commit_version] = min(starts.get(f.commit_version, f.offset), f.offset)
    return [0, *(starts[v] for v in sorted(starts)[1:]), total]


def row_cuts(rows: int, total: int) -> list[int]:
    """A batch every ``rows`` events."""
    return [*range(0, total, rows), total] if total else [0, 0]


def explicit_cuts(cuts: tuple[int, ...], total: int) -> list[int]:
    """Explicit interior cut points, checked against the input size."""
    if any(c > total for c in cuts):
        raise PlanError(f"cut point {max(cuts)} is past the end of the input ({total} events)")
    return [0, *cuts, total]


def time_cuts(first_seq_per_bucket: dict[int, int], total: int) -> list[int]:
    """Cut where the arrival stream first reaches each event-time interval boundary.

    ``first_seq_per_bucket[b]`` is the smallest arrival sequence of an event in interval ``b``
    (0 = the interval holding the earliest event). The cut before interval ``k`` is the first
    arrival of any event at or after it, so cuts never decrease even with disorder.
    """
    if not first_seq_per_bucket:
        return [0, total]
    last = max(first_seq_per_bucket)
    cuts, running = [], total
    for bucket in range(last, 0, -1):
        running = min(running, first_seq_per_bucket.get(bucket, total))
        cuts.append(running)
    return [0, *reversed(cuts), total]


def resolve_cuts(spec: BatchSpec, files: list[InputFile],
                 event_times: Callable[[], tuple[np.ndarray, np.ndarray]]) -> list[int]:
    """Cut points of a batch plan over the pinned input (``files``); ``event_times`` reads the
    (event time in microseconds, arrival sequence) of the input's events that have a time, for
    a plan by time."""
    total = sum(f.rows for f in files)
    if spec.by == "rows":
        return row_cuts(spec.rows or 1, total)
    if spec.by == "cuts":
        return explicit_cuts(spec.cuts, total)
    if spec.by == "time":
        assert spec.interval_us is not None
        t, seq = event_times()
        if not len(t):
            return [0, total]
        first = int(t.min())
        interval = (t - (first - first % spec.interval_us)) // spec.interval_us
        first_seq = pd.Series(seq).groupby(interval).min()
        return time_cuts({int(b): int(s) for b, s in first_seq.items()}, total)
    return commit_cuts(files, total)

"""Batch plans: how the arrival-ordered input is cut into micro-batches.

Every plan resolves to cut points on the arrival sequence: batch ``i`` holds the events with
``cuts[i] <= __seq < cuts[i + 1]``. Cut points may repeat (empty batches).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.catalog import BatchSpec, CatalogError, parse_duration_us
from engine.errors import RepriseError

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

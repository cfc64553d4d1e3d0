"""A continued pipeline stage equals a fresh replay of the chain when its upstream's
continuation redid batches whose output row counts did not change (the stage's cut points, the
running sums of those counts, cannot tell them apart), and when the upstream was continued on
its own before (the stage's run read an older version of the upstream's output).

The chain: ``ev`` -> ``ev_w`` (5 s tumbling windows, 3 s lateness) -> ``ev_w_max`` (20 s windows
over ``ev_w``'s rows), one batch per commit; the events are few and placed by hand so that a
window of ``ev_w`` is emitted by the provisional end-of-input flush with some of its events and
by a later batch with all of them (one row each time)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from test_pipeline_continue_crash import rows
from test_pipeline_replay import pipeline_catalog

from jobs.runs.continuation import continue_query
from jobs.runs.pipeline_stage import upstream_run
from jobs.runs.replay import Replay
from jobs.runs.run_info import read_run
from jobs.warehouse import Warehouse

PLAN = "commit"
STAGE, UPSTREAM = "ev_w_max", "ev_w"
T0 = 1_700_000_000_000_000  # (µs)


def events(*rows: tuple[str, int, int]) -> pa.Table:
    """Events ``(key, seconds after T0, value)``, in this arrival order."""
    return pa.table({"k": pa.array([r[0] for r in rows], pa.string()),
                     "ts": pa.array([T0 + r[1] * 1_000_000 for r in rows], pa.int64()).cast(
                         pa.timestamp("us", tz="UTC")),
                     "v": pa.array([r[2] for r in rows], pa.int64())})


def replay_in(spark, storage, name: str) -> Replay:
    root = Path(tempfile.mkdtemp(prefix=f"reprise-stage-{name}-"))
    return Replay(spark, storage, Warehouse(root / "warehouse"),
                  pipeline_catalog(root / "schemas"))


def append(replay: Replay, table: pa.Table) -> None:
    replay.storage.write(table, replay.warehouse.recording("ev"), mode="append")


def assert_equals_a_fresh_chain(spark, storage, continued: Replay, stage_run: str,
                                commits: list[pa.Table]) -> None:
    """The stage's run and its upstream's hold the tables of a fresh replay of the chain over
    ``commits``."""
    fresh = replay_in(spark, storage, "fresh")
    for table in commits:
        append(fresh, table)
    info = fresh.prepare(STAGE, plan=PLAN)
    fresh.run(info)
    ours = [upstream_run(continued, read_run(continued.warehouse, stage_run)), stage_run]
    theirs = [upstream_run(fresh, info), info.run_id]
    for mine, other in zip(ours, theirs, strict=True):
        assert mine is not None and other is not None
        for kind in ("output", "late", "quarantine"):
            assert rows(continued, mine, kind) == rows(fresh, other, kind), (mine, kind)
    assert rows(fresh, info.run_id), "the stage emitted rows"


def rows_out(replay: Replay, run_id: str) -> list[int]:
    return replay.manifest(run_id).sort_by("batch").column("rows_out").to_pylist()


def test_a_stage_redoes_the_batches_its_upstream_redid_though_their_row_counts_are_the_same(
        spark, storage):
    """The upstream's flush emitted window [0, 5 s) of 2 events; its continuation's first
    batch emits that window again, closed, with a third event: one row both times, so the
    stage's cut points over batches 0-1 are unchanged, but its batch 1 must be redone."""
    commits = [events(("a", 0, 1), ("a", 1, 2)), events(("a", 2, 10), ("a", 30, 5))]
    replay = replay_in(spark, storage, "continued")
    append(replay, commits[0])
    made = replay.prepare(STAGE, plan=PLAN)
    replay.run(made)
    upstream = upstream_run(replay, made)
    assert upstream is not None
    before = rows_out(replay, upstream)
    append(replay, commits[1])
    result = continue_query(replay, STAGE, PLAN, log=lambda line: None)
    assert result.info.run_id == made.run_id  # (continued in place)
    assert rows_out(replay, upstream)[:2] == before == [0, 1]  # (the premise)
    assert read_run(replay.warehouse, upstream).segments[-1]["first_batch"] == 1
    assert result.info.segments[-1]["first_batch"] == 1
    assert_equals_a_fresh_chain(spark, storage, replay, made.run_id, commits)


@pytest.mark.parametrize("commits", [
    # the upstream's second continuation redoes from its batch 2 only, but the stage read the
    # upstream's output before the first one, which redid batch 1 already
    [events(("a", 0, 1), ("a", 1, 2)), events(("a", 2, 10)), events(("a", 30, 5))],
    # and the batch the first continuation redid emits as many rows as the flush it replaced
    # (the window [0, 5 s), closed with a third event): the stage's cut points do not show it
    [events(("a", 0, 1), ("a", 1, 2)), events(("a", 2, 10), ("a", 30, 5)),
     events(("a", 31, 7))],
], ids=["redone-after-the-read", "redone-with-as-many-rows"])
def test_a_stage_continued_after_its_upstream_was_continued_alone_equals_a_fresh_chain(
        spark, storage, commits):
    """The upstream is continued on its own (``replay ev_w --continue``), then the stage: the
    stage redoes every batch either continuation of the upstream redid."""
    replay = replay_in(spark, storage, "continued")
    append(replay, commits[0])
    made = replay.prepare(STAGE, plan=PLAN)
    replay.run(made)
    append(replay, commits[1])
    continue_query(replay, UPSTREAM, PLAN, log=lambda line: None)
    append(replay, commits[2])
    result = continue_query(replay, STAGE, PLAN, log=lambda line: None)
    assert result.info.run_id == made.run_id
    assert_equals_a_fresh_chain(spark, storage, replay, made.run_id, commits)

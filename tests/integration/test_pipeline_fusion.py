"""Fused pipeline stages on Spark: a chain of stages that keep one key runs in its first query's
tasks, and each run's tables (arrival numbers included) and manifest equal those of the
separate path (the upstream's complete run, then each stage over its upstream's output table),
for chains of two and three stages, random batch plans and job sizes, on both engines; the
fused run validates against its own reference over the upstream's output and against the
composed reference over the recording."""

from __future__ import annotations

import dataclasses
import itertools
import json
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_pipeline_continue_crash import chain_runs
from test_pipeline_replay import chain_replay, pipeline_catalog

from jobs.runs.lifecycle import CHECKPOINT_EVERY
from jobs.runs.pipeline_fusion import chain_plan
from jobs.runs.pipeline_stage import stage_over, upstream_read
from jobs.runs.replay import Replay, run_id_of
from jobs.runs.run_info import read_run
from jobs.runs.validate import reconcile_run, validate_run
from jobs.runtime.lazy_session import LazySpark
from jobs.settings import Settings
from jobs.storage import open_storage
from jobs.storage.delta_rs import DeltaRsStorage

MANIFEST = ("batch", "kind", "seq_lo", "seq_hi", "rows_in", "rows_out", "late", "quarantined")


def table_rows(replay: Replay, run_id: str, table: str) -> list[tuple]:
    """A run table's rows, ``batch`` included, in a stable order."""
    path = replay.warehouse.run_table(run_id, table)
    if not replay.storage.exists(path):
        return []
    data = replay.storage.read_arrow(path).to_pylist()
    return sorted((tuple(sorted(r.items())) for r in data), key=repr)


def manifest_rows(replay: Replay, run_id: str) -> list[tuple]:
    return [tuple(r[c] for c in MANIFEST) for r in replay.manifest(run_id).to_pylist()]


def separate(replay: Replay, stage: str, plan: str) -> tuple[str, ...]:
    """The separate path: a complete run of the chain's first query, then each stage's run
    over the complete output of the one before; the chain's run ids."""
    tag = uuid.uuid4().hex[:6]
    chain = replay.context(stage).query.chain
    upstream = replay.prepare(chain[0].name, plan=plan, run_id=f"up-{tag}")
    replay.run(upstream)
    runs = [upstream.run_id]
    for position, query in enumerate(chain[1:], 1):
        info = stage_over(replay, replay.context(query.name), upstream,
                          f"stage{position}-{tag}", run_id_of)
        assert not info.fused_with
        replay.run(info)
        runs.append(info.run_id)
        upstream = info
    return tuple(runs)


def input_rows(replay: Replay, run_id: str) -> list[dict]:
    """A stage's input rows in arrival order (its ``run.json``'s files, in order)."""
    info = read_run(replay.warehouse, run_id)
    schema = replay.storage.schema(info.input_path, info.input_version)
    return [row for f in info.files
            for row in replay.storage.read_file(f["uri"], schema=schema).to_pylist()]


def assert_same_runs(replay: Replay, fused: tuple[str, ...], apart: tuple[str, ...],
                     elsewhere: Replay | None = None) -> None:
    """The runs ``fused`` (a fused chain's, complete) hold what the runs ``apart`` hold, run
    by run: the runs of ``elsewhere``'s warehouse (default: the same one)."""
    there = elsewhere or replay
    for position, (mine, theirs) in enumerate(zip(fused, apart, strict=True)):
        for table in ("output", "late", "quarantine"):
            assert table_rows(replay, mine, table) == table_rows(there, theirs, table), \
                (mine, table)
        assert manifest_rows(replay, mine) == manifest_rows(there, theirs), mine
        for table in ("output", "state"):  # the same commits, so the same checkpoints
            assert checkpoints(replay, mine, table) == checkpoints(there, theirs, table), mine
        ours, other = read_run(replay.warehouse, mine), read_run(there.warehouse, theirs)
        assert ours.cuts == other.cuts and not ours.fused_with
        if position:  # a stage's input table: the same rows in the same arrival order
            assert input_rows(replay, mine) == input_rows(there, theirs), mine
            upstream = fused[position - 1]  # its newest commit names the upstream's output
            assert upstream_read(replay, ours) == (upstream, replay.storage.version(
                replay.warehouse.run_table(upstream, "output"))), mine


def checkpoints(replay: Replay, run_id: str, table: str) -> list[str]:
    """The checkpoint files of a run's table, and the version its last one holds."""
    log = Path(replay.warehouse.run_table(run_id, table)) / "_delta_log"
    last = log / "_last_checkpoint"
    return [*sorted(p.name for p in log.glob("*.checkpoint*")),
            *([json.loads(last.read_text())["version"]] if last.exists() else [])]


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@example(seed=1, rows=12, stage="ev_w_alerts", per_job=3)  # 42 batches: checkpoints
@given(seed=st.integers(0, 2**16), rows=st.integers(7, 400),
       stage=st.sampled_from(["ev_w_alert", "ev_w_max", "ev_w_alerts"]),
       per_job=st.integers(1, 5))
def test_a_fused_chain_equals_the_separate_path_for_random_plans(spark, storage, seed, rows,
                                                                 stage, per_job):
    """Two stages (window -> QRE, window -> window) and three (window -> QRE -> select),
    every stage fused, in jobs of a random number of batches."""
    replay = chain_replay(spark, storage, seed, 500, 4, "driver")
    replay.batches_per_job = per_job
    plan = f"rows:{rows}"
    info = replay.prepare(stage, plan=plan)
    assert info.fused_with  # the upstream had no complete run: fused
    chain = [read_run(replay.warehouse, r) for r in fused_chain_ids(replay, info)]
    assert all(c.fused_with == b.run_id for b, c in itertools.pairwise(chain))
    replay.run(info)
    fused = tuple(chain_runs(replay, info))
    assert len(fused) == len(replay.context(stage).query.chain)
    assert_same_runs(replay, fused, separate(replay, stage, plan))
    assert table_rows(replay, info.run_id, "output") or stage != "ev_w_max"
    if read_run(replay.warehouse, fused[0]).batches >= CHECKPOINT_EVERY:  # (compared above)
        assert checkpoints(replay, fused[0], "state")


def fused_chain_ids(replay: Replay, info) -> list[str]:
    """The run ids of a prepared (not yet run) fused chain, first query's first."""
    runs = [info.run_id]
    while (before := read_run(replay.warehouse, runs[0]).fused_with):
        runs.insert(0, before)
    return runs


def test_a_fused_chain_on_spark_validates_and_is_reused(spark, storage):
    """Three stages (window -> QRE -> select) fused on Spark: every run validates, equals the
    separate path, and is reused by the next replay."""
    replay = chain_replay(spark, storage, 5, 700, 4, "spark")
    replay.batches_per_job = 3
    info = replay.prepare("ev_w_alerts", plan="rows:90")
    assert info.fused_with
    replay.run(info)
    runs = tuple(chain_runs(replay, info))
    assert len(runs) == 3
    for run_id in runs:
        report = validate_run(replay, replay.catalog, run_id)
        assert report.ok, (run_id, report.diff, report.late_mismatch, report.chain)
        assert reconcile_run(replay, run_id).ok
        assert {e["engine"] for e in read_run(replay.warehouse, run_id).engines} == {"spark"}
        assert not read_run(replay.warehouse, run_id).fused_with
    assert_same_runs(replay, runs, separate(replay, "ev_w_alerts", "rows:90"))
    # a second replay reuses the runs; a second stage over the complete upstream is not fused
    again = replay.prepare("ev_w_alerts", plan="rows:90")
    assert again.run_id == info.run_id and not again.fused_with
    other = replay.prepare("ev_w_max", plan="rows:90")
    assert not other.fused_with


class StageCrash(Exception):
    """The replay's process dies at a commit into a run's tables (see :func:`crash_in`)."""


def crash_in(storage, run_id: str, k: int) -> None:
    """Make ``storage`` raise :class:`StageCrash` before its ``k``-th table commit (1-based)
    into the tables of run ``run_id``."""
    seen = [0]

    def counted(method, where: int):
        def commit(*args, **kwargs):
            if f"/{run_id}/" in str(kwargs.get("path", args[where])):
                seen[0] += 1
                if seen[0] == k:
                    raise StageCrash(f"commit {k} into run {run_id}")
            return method(*args, **kwargs)
        return commit

    for name, where in (("write", 1), ("commit_files", 0)):
        setattr(storage, name, counted(getattr(storage, name), where))


def test_a_crashed_fused_chain_is_finished_stage_by_stage(spark):
    """A 3-stage fused chain killed in its last stage's run: replaying the middle stage alone
    finishes the first two runs (fused); replaying the last stage then steps it over the
    middle run's recorded input; every run equals the separate path and validates."""
    plan = "rows:30"
    replay = chain_replay(spark, open_storage(spark, "delta-rs"), 11, 300, 3, "driver")
    replay.batches_per_job = 2
    info = replay.prepare("ev_w_alerts", plan=plan)
    chain = fused_chain_ids(replay, info)
    crash_in(replay.storage, chain[2], 7)
    with pytest.raises(StageCrash):
        replay.run(info)
    assert 0 < replay.manifest(chain[2]).num_rows < replay.manifest(chain[1]).num_rows
    # a new process replays the middle stage alone, then the last one
    resumed = Replay(spark, open_storage(spark, "delta-rs"), replay.warehouse, replay.catalog,
                     engine="driver", batches_per_job=2)
    middle = resumed.prepare("ev_w_alert", plan=plan)
    assert (middle.run_id, middle.fused_with) == (chain[1], chain[0])
    resumed.run(middle)
    last = resumed.prepare("ev_w_alerts", plan=plan)
    assert (last.run_id, last.fused_with) == (chain[2], chain[1])
    resumed.run(last)
    assert tuple(chain_runs(resumed, last)) == tuple(chain)
    assert_same_runs(resumed, tuple(chain), separate(resumed, "ev_w_alerts", plan))
    for run_id in chain:
        report = validate_run(resumed, resumed.catalog, run_id)
        assert report.ok, (run_id, report.diff, report.late_mismatch, report.chain)


def test_plan_shows_which_stages_are_fused(tmp_path):
    plan = chain_plan(pipeline_catalog(tmp_path / "schemas").query("ev_w_alerts"))
    assert [s["fused_with_upstream"] for s in plan["stages"]] == [False, True, True]
    assert plan["fused"] == [["ev_w", "ev_w_alert"], ["ev_w_alert", "ev_w_alerts"]]


def test_a_fused_chain_hands_over_to_spark_at_the_batch_the_setting_names(spark, storage):
    """A fused chain (window -> QRE -> select) run with ``handover_at`` runs its groups before
    that batch in the driver (Spark starting meanwhile) and the others on Spark, as each run's
    engine notes say, and its runs' tables equal those of the same chain, over the same
    recording in a warehouse of its own, run without the setting."""
    lazy = LazySpark(Settings(spark_master="local[2]"))
    replays, runs = {}, {}
    for name, handover_at in (("handover", 4), ("plain", None)):
        replay = dataclasses.replace(
            chain_replay(spark, storage, 7, 300, 3), spark=lazy, storage=DeltaRsStorage(lazy),
            engine="auto", batches_per_job=2,
            settings=Settings(spark_master="local[2]", handover_at=handover_at))
        info = replay.prepare("ev_w_alerts", plan="rows:30")
        assert info.fused_with
        replay.run(info)
        replays[name], runs[name] = replay, tuple(chain_runs(replay, info))
    assert len(runs["handover"]) == 3
    assert_same_runs(replays["handover"], runs["handover"], runs["plain"], replays["plain"])
    for run_id in runs["handover"]:
        engines = [(e["engine"], *e["batches"])
                   for e in read_run(replays["handover"].warehouse, run_id).engines]
        assert [e[0] for e in engines] == ["driver", "spark"], (run_id, engines)
        assert engines[0][1:] == (0, 3) and engines[1][1] == 4, (run_id, engines)
        assert validate_run(replays["handover"], replays["handover"].catalog, run_id).ok
    assert lazy.started  # started in the background by the hand-over, then used

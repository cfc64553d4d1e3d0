"""A shared run goes through the same run lifecycle as a single run: it finishes a rewind a
continuation left undone, deletes the files its lost task attempts staged, and checkpoints its
tables, as a single run does."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
from test_shared_replay import TABLES, setup

import jobs.runs.lifecycle
from jobs.runs.continuation import extend
from jobs.runs.run_info import read_run
from jobs.runs.run_segments import pending
from jobs.runs.validate import validate_run
from jobs.shared.shared_run import SharedReplay
from jobs.shared.standalone_compare import table_rows

PLAN = "rows:20"


def test_a_shared_run_finishes_the_rewind_a_continuation_left_undone(spark, storage):
    shared, alone, catalog = setup(spark, storage, 160, seed=5, commits=4)
    older = shared.prepare("win_t", plan=PLAN, version=1)
    shared.run(older)
    # a continuation to the latest version, stopped after planning its segment (rewind undone)
    continued = extend(shared, older.run_id,
                       log=lambda line: None).info
    assert pending(read_run(shared.warehouse, older.run_id))
    runner = SharedReplay(shared)
    infos = [continued, shared.prepare("sel_lo", plan=PLAN)]
    plan, apart = runner.plan(infos)
    assert plan is not None and not apart  # one shared scan of both runs
    runner.run(infos, planned=(plan, apart))
    assert not pending(read_run(shared.warehouse, older.run_id))
    for info in infos:
        fresh = alone.prepare(info.query, plan=PLAN)
        alone.run(fresh)
        for kind in TABLES:
            pd.testing.assert_frame_equal(table_rows(shared, info.run_id, kind),
                                          table_rows(alone, fresh.run_id, kind),
                                          check_dtype=False)
        assert validate_run(shared, catalog, info.run_id).ok


def _checkpoints(replay, run_id: str) -> dict[str, list[str]]:
    """Each table's checkpoint files."""
    run_dir = replay.warehouse.run_dir(run_id)
    return {table: sorted(p.name for p in (run_dir / table / "_delta_log").glob("*.checkpoint*"))
            for table in ("output", "late", "quarantine", "state", "manifest")}


def _lost_attempts(replay, strays: list[Path]):
    """A ``before_manifest`` hook that leaves, once per run, the files of a task attempt lost
    during the run (a copy of a committed output file) in each table's directory."""
    def lose(run_id: str, group: list[int]) -> None:
        if group[0] != 0:
            return
        run_dir = replay.warehouse.run_dir(run_id)
        source = next((run_dir / "output").rglob("*.parquet"))
        for table in ("output", "late", "state"):
            stray = run_dir / table / "data" / "b000000-0ddba11" / "part-b00000-a7.parquet"
            stray.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, stray)
            strays.append(stray)
    return lose


def test_a_shared_run_cleans_up_and_checkpoints_as_a_single_run_does(spark, storage,
                                                                      monkeypatch):
    monkeypatch.setattr(jobs.runs.lifecycle, "CHECKPOINT_EVERY", 4)
    shared, alone, _ = setup(spark, storage, 160, seed=9)
    strays: list[Path] = []
    for replay in (shared, alone):
        replay.batches_per_job = 1  # a group a batch: many commits, strays between groups
        replay.before_manifest = _lost_attempts(replay, strays)
    names = ["win_t", "sel_lo"]
    runner = SharedReplay(shared)
    infos = runner.prepare(names, plan=PLAN)
    assert runner.plan(infos)[0] is not None
    runner.run(infos)
    for name in names:
        alone.run(alone.prepare(name, plan=PLAN))
    assert len(strays) == 2 * 2 * 3  # each run of each side lost an attempt
    assert not any(s.exists() or s.parent.exists() for s in strays)
    for info in infos:
        made = _checkpoints(shared, info.run_id)
        assert made["output"] and made["manifest"], made
        assert made == _checkpoints(alone, info.run_id)

"""A run's lifecycle around crashes: per-batch commit progress, staged files of killed attempts."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import events_table, small_catalog, write_commits

from jobs.runs.replay import Replay
from jobs.runs.validate import validate_run
from jobs.warehouse import Warehouse


@pytest.fixture
def replay(spark, storage, tmp_path):
    catalog = small_catalog(tmp_path / "schemas")
    warehouse = Warehouse(tmp_path / "warehouse")
    write_commits(storage, warehouse.recording("ev"), events_table(np.random.default_rng(8), 120),
                  3)
    return Replay(spark, storage, warehouse, catalog)


def test_every_batch_reports_its_commit_in_order_within_one_spark_job(replay):
    committed: list[int] = []
    replay.on_commit = committed.append
    info = replay.prepare("ev_w", plan="rows:10", run_id="progress")
    assert replay.batches_per_job >= info.batches  # all batches in one Spark job
    replay.run(info)
    assert committed == list(range(info.batches + 1))


def _parquet(root: Path) -> set[Path]:
    return {p for p in root.rglob("*.parquet") if "_delta_log" not in p.parts}


def test_resume_removes_staged_files_no_table_version_references(replay):
    info = replay.prepare("ev_w", plan="rows:30", run_id="killed")
    replay.run(info)
    run_dir = replay.warehouse.run_dir("killed")
    committed = _parquet(run_dir)
    assert committed
    strays = []
    for table in ("output", "state", "manifest", "late"):
        source = next(iter(_parquet(run_dir / table)), None) or next(iter(committed))
        stray = run_dir / table / "data" / "b000002-deadbeef" / "part-b00001-adeadbeef.parquet"
        stray.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, stray)
        strays.append(stray)
    outside = run_dir.parent / "other-run" / "output" / "data" / "x" / "part.parquet"
    outside.parent.mkdir(parents=True)
    shutil.copy(next(iter(committed)), outside)

    replay.run(info)  # a resume of the (complete) run: nothing to run, strays to clean
    assert _parquet(run_dir) == committed  # every file some version references is kept
    assert not any(s.exists() or s.parent.exists() for s in strays)
    assert outside.exists()  # only the run's own directories are cleaned
    assert validate_run(replay, replay.catalog, "killed").ok


def test_a_completed_run_keeps_no_files_of_attempts_killed_during_it(replay):
    """A task attempt killed while the run goes on (a lost executor) leaves its files in the
    table directories; they are gone once the run completes, without a resume."""
    info = replay.prepare("ev_w", plan="rows:30", run_id="lost-attempts")
    replay.batches_per_job = 1  # several jobs: strays appear between two of them
    run_dir = replay.warehouse.run_dir("lost-attempts")
    strays: list[Path] = []

    def lost_attempt(run_id: str, group: list[int]) -> None:
        if group != [0]:
            return
        source = next(iter(_parquet(run_dir / "output")))
        for table in ("output", "late", "state"):
            stray = run_dir / table / "data" / f"b{group[0]:06d}-0ddba11" / "part-b00000-a7.parquet"
            stray.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, stray)
            strays.append(stray)

    replay.before_manifest = lost_attempt
    replay.run(info)
    assert len(strays) == 3
    assert not any(s.exists() or s.parent.exists() for s in strays)
    assert validate_run(replay, replay.catalog, "lost-attempts").ok

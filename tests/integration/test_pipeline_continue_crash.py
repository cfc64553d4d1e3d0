"""A pipeline replay killed in its upstream's run and again (twice) in its downstream's run,
fused with the upstream's, resumes to the uninterrupted result; a chain continued after appends
(each stage's run continued in place over its upstream's new rows) equals a fresh replay of the
chain (tables as a reader sees them)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from continue_kills import (
    COMMITS,
    assert_equals_fresh,
    ok,
    planned_version,
    reprise,
    run_json,
)
from helpers import events_table, write_commits
from test_continue_kills import later_readings_csv
from test_crash import ROOT, child_env
from test_pipeline_replay import pipeline_catalog

from engine.catalog import load_catalog
from jobs.recordings.store import generate_recording
from jobs.runs.continuation import continue_query
from jobs.runs.pipeline_stage import upstream_run
from jobs.runs.replay import Replay
from jobs.runs.run_info import RunInfo, read_run
from jobs.warehouse import Warehouse

PLAN = "rows:2000"
CHAIN = ("vitals_hr_1m", "vitals_tachy_alert")


def rows(replay: Replay, run_id: str, table: str = "output") -> list[tuple]:
    """A run table's rows as a reader sees them (without the bookkeeping columns)."""
    data = replay.storage.read_arrow(replay.warehouse.run_table(run_id, table))
    data = data.drop_columns([c for c in ("batch", "final") if c in data.column_names])
    return sorted((tuple(sorted(r.items())) for r in data.to_pylist()), key=repr)


def killed(warehouse: Path, run_id: str, batch: int) -> None:
    """Run the chain of ``CHAIN[-1]`` in a process that kills itself in run ``run_id``."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "support" / "crash_pipeline.py"), str(warehouse),
         CHAIN[-1], PLAN, run_id, str(batch)], cwd=ROOT, env=child_env(warehouse),
        capture_output=True, timeout=900)
    assert done.returncode == -9, done.stdout.decode() + done.stderr.decode()


def test_a_killed_pipeline_replay_resumes_to_the_uninterrupted_result(spark, storage):
    catalog = load_catalog(ROOT / "schemas")
    replays = []
    for name in ("killed", "whole"):
        warehouse = Warehouse(Path(tempfile.mkdtemp(prefix=f"reprise-pipe-{name}-")))
        generate_recording(storage, warehouse, catalog, "vitals", keys=12, events=24_000,
                           seed=4, commits=3)
        replays.append(Replay(spark, storage, warehouse, catalog))
    dying, whole = replays
    upstream, downstream = (dying.default_run_id(q, PLAN) for q in CHAIN)
    killed(dying.warehouse.root, upstream, 4)
    assert 0 < dying.manifest(upstream).num_rows < 13
    # the stage runs fused with its upstream (jobs of 3 batches: the upstream's batches of a
    # job are committed, then the stage's)
    assert read_run(dying.warehouse, downstream).fused_with == upstream
    killed(dying.warehouse.root, downstream, 4)
    # killed between the two: the upstream is a job ahead, so the resumed run steps it again
    # from its state before the stage's next batch to feed the stage
    assert 0 < dying.manifest(downstream).num_rows < dying.manifest(upstream).num_rows < 13
    killed(dying.warehouse.root, downstream, 13)  # in the last job, the stage's own flush in it
    assert dying.manifest(upstream).num_rows == 13
    assert 6 <= dying.manifest(downstream).num_rows < 14
    dying.run(dying.prepare(CHAIN[-1], plan=PLAN))
    assert not read_run(dying.warehouse, downstream).fused_with  # complete: cuts recorded
    whole.run(whole.prepare(CHAIN[-1], plan=PLAN))
    for run_id in (upstream, downstream):
        for table in ("output", "late", "quarantine"):
            assert rows(dying, run_id, table) == rows(whole, run_id, table), (run_id, table)
    assert rows(whole, downstream)


def test_a_continued_chain_equals_a_fresh_replay(spark, storage):
    table = events_table(np.random.default_rng(11), 900)
    replays = []
    for name in ("continued", "fresh"):
        root = Path(tempfile.mkdtemp(prefix=f"reprise-pipe-{name}-"))
        replays.append(Replay(spark, storage, Warehouse(root / "warehouse"),
                              pipeline_catalog(root / "schemas")))
    continued, fresh = replays
    parts = [(0, 400), (400, 700), (700, 900)]
    for lo, hi in parts:  # the same commits in both warehouses
        write_commits(storage, fresh.warehouse.recording("ev"), table.slice(lo, hi - lo), 2)
    first: list[str] = []
    for number, (lo, hi) in enumerate(parts):
        write_commits(storage, continued.warehouse.recording("ev"), table.slice(lo, hi - lo), 2)
        if number == 0:
            made = continued.prepare("ev_w_alerts")
            continued.run(made)
            first = chain_runs(continued, made)
            continue
        result = continue_query(continued, "ev_w_alerts", log=lambda line: None)
        # every stage's run is continued in place (one more segment each), the kept batches
        # not stepped again: each stage reads its upstream's new rows only
        assert chain_runs(continued, result.info) == first
        for run_id in first:
            info = read_run(continued.warehouse, run_id)
            assert len(info.segments) == number + 1 and info.segments[-1]["first_batch"] > 0
            assert continued.manifest(run_id).num_rows == info.batches + 1
    info = fresh.prepare("ev_w_alerts")
    fresh.run(info)
    ours, theirs = chain_runs(continued, result.info), chain_runs(fresh, info)
    assert len(ours) == len(theirs) == 3
    for mine, other in zip(ours, theirs, strict=True):
        for kind in ("output", "late", "quarantine"):
            assert rows(continued, mine, kind) == rows(fresh, other, kind), (mine, kind)
    # a fresh replay of the chain beside the continued one: other runs, the same tables
    again = continued.prepare("ev_w_alerts")
    continued.run(again)
    beside = chain_runs(continued, again)
    assert not set(beside) & set(ours)
    assert [rows(continued, r) for r in beside] == [rows(continued, r) for r in ours]


def chain_runs(replay: Replay, info: RunInfo) -> list[str]:
    """The runs of ``info``'s chain, the first stage's first."""
    runs = [info.run_id]
    while (up := upstream_run(replay, read_run(replay.warehouse, runs[0]))) is not None:
        runs.insert(0, up)
    return runs


def test_a_killed_stage_continuation_is_finished_by_the_next_one(tmp_path):
    """``replay STAGE --continue`` killed late in the stage's continuation (its input's
    commit, rewind and batches come after the upstream's; a kill in the upstream's
    continuation is ``test_continue_kills``'s): the next one finishes both runs in place, and
    each equals a fresh replay of the chain at that version."""
    base, plan = tmp_path / "base", ["--plan", "rows:1000"]
    ok(base, "generate", "vitals", "--keys", "30", "--events", "8000", "--commits", "4")
    ok(base, "replay", CHAIN[-1], *plan)
    made = sorted(p.name for p in (base / "runs").iterdir())
    ok(base, "record", "vitals", str(later_readings_csv(tmp_path, 30, 3_000)))
    shutil.copytree(base, tmp_path / "whole")
    out = ok(tmp_path / "whole", "replay", CHAIN[-1], "--continue", *plan)
    commits = json.loads(out.split(COMMITS)[-1].splitlines()[0])["commits"]
    rc, out = reprise(base, "replay", CHAIN[-1], "--continue", *plan, kill=f"c{commits - 3}")
    assert rc == -signal.SIGKILL and "continued over run" in out, out  # (the stage's part)
    ok(base, "replay", CHAIN[-1], "--continue", *plan)
    assert sorted(p.name for p in (base / "runs").iterdir()) == made
    for query, run_id in zip(CHAIN, made, strict=True):  # (the upstream's id sorts first)
        info = run_json(base, run_id)
        assert len(info["segments"]) == 2, run_id
        assert_equals_fresh(base, query, run_id, "rows:1000", planned_version(info))

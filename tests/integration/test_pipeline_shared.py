"""Several pipeline stages over one upstream replayed together share its stream as queries on a
recording do: the upstream runs once, its output is read once, and the stages run as one shared
pass, each with its own run (the id of its standalone replay), tables and validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_pipeline_replay import ALERT, HOURLY, OVER_ALERT
from test_shared_replay import assert_same_runs, setup
from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.runs.pipeline_stage import upstream_read
from jobs.runs.replay import Replay
from jobs.runs.run_info import read_run
from jobs.runs.validate import reconcile_run, validate_run
from jobs.shared.shared_run import SharedReplay
from jobs.shared.standalone_compare import table_rows

#: A third stage over ``ev_w`` with a ``where:`` the shared plan widens to the scan's predicate.
BUSY = """\
name: ev_w_busy
kind: select
input: {query: ev_w}
where: n > 3 OR hi IS NULL
query: {columns: [k, window_end, n, hi]}
"""
STAGES = ["ev_w_max", "ev_w_alert", "ev_w_busy"]
QUERIES = {"ev_w_max": HOURLY, "ev_w_alert": ALERT, "ev_w_alerts": OVER_ALERT, "ev_w_busy": BUSY}


def two_warehouses(spark, storage, seed: int, events: int) -> tuple[Replay, Replay]:
    """Replays of the pipeline catalog over two warehouses holding the same recording."""
    shared, alone, _ = setup(spark, storage, events, seed, queries=QUERIES)
    return shared, alone


def test_stages_over_one_upstream_read_it_once_and_equal_their_standalone_runs(spark, storage):
    shared_side, alone = two_warehouses(spark, storage, seed=5, events=500)
    shared = SharedReplay(shared_side)
    infos = shared.prepare(STAGES, plan="rows:41")
    assert shared.upstream_reads == 1
    plan, on_own = shared.plan(infos)
    assert plan is not None and on_own == []
    shared.run(infos)
    assert shared.tasks >= 1
    # every stage read the same upstream run at the same output version: one read
    reads = {upstream_read(shared_side, info) for info in infos}
    assert len(reads) == 1 and None not in next(iter(reads))
    standalone = []
    for name in STAGES:  # the first fuses with the upstream, the others reuse its run
        info = alone.prepare(name, plan="rows:41")
        alone.run(info)
        standalone.append(info.run_id)
    assert [i.run_id for i in infos] == standalone
    assert_same_runs(shared_side, alone, standalone)
    for run_id in standalone:
        # against its reference over the upstream's output, and the composed one over `ev`
        report = validate_run(shared_side, shared_side.catalog, run_id)
        assert report.ok and report.chain is not None, (run_id, report.diff, report.chain)
        assert reconcile_run(shared_side, run_id).ok
    assert len(table_rows(shared_side, standalone[2], "output")), "the busy stage kept rows"
    # a second shared replay reuses every run without reading the upstream's output again
    again = SharedReplay(shared_side)
    assert [i.run_id for i in again.prepare(STAGES, plan="rows:41")] == standalone
    assert again.upstream_reads == 0


def test_replay_of_two_stages_on_the_command_line_is_one_shared_run(spark, storage):
    replay, _ = two_warehouses(spark, storage, seed=2, events=200)
    root = Path(replay.warehouse.root)
    result = CliRunner().invoke(app, ["replay", "ev_w_busy", "ev_w_max", "--catalog",
                                      str(root.parent / "schemas"), "--warehouse", str(root)])
    assert result.exit_code == 0, result.output
    assert "shared run of ev_w_busy, ev_w_max" in result.output
    for name in ("ev_w_busy", "ev_w_max"):
        info = replay.prepare(name)  # (the run the command made, complete)
        assert replay.manifest(info.run_id).num_rows == info.batches + 1


class Killed(Exception):
    """The replay's process dies before a manifest commit."""


def test_a_stage_left_fused_resumes_alone_and_a_killed_shared_run_resumes(spark, storage):
    replay, alone = two_warehouses(spark, storage, seed=9, events=400)
    plan = "rows:29"
    replay.batches_per_job = alone.batches_per_job = 2
    commits: list[str] = []

    def kill(run_id: str, group: list[int]) -> None:
        commits.append(run_id)
        if len([r for r in commits if r.startswith(stage)]) == 2:
            raise Killed(run_id)

    replay.before_manifest = kill
    stage = "ev_w_max"  # its replay alone runs fused with ev_w's, killed in its second job
    with pytest.raises(Killed):
        replay.run(replay.prepare(stage, plan=plan))
    fused = replay.prepare(stage, plan=plan)
    assert fused.fused_with
    stage = "ev_w_alert"  # the shared run of the others, killed in its second job
    shared = SharedReplay(replay)
    infos = shared.prepare(STAGES, plan=plan)
    planned = shared.plan(infos)
    assert planned[0] is not None and [i.query for i in planned[1]] == ["ev_w_max"]
    with pytest.raises(Killed):
        shared.run(infos, planned=planned)
    # a new process resumes every run
    resumed = Replay(spark, storage, replay.warehouse, replay.catalog, batches_per_job=2)
    again = SharedReplay(resumed)
    infos = again.prepare(STAGES, plan=plan)
    again.run(infos)
    assert not read_run(resumed.warehouse, fused.run_id).fused_with
    run_ids = [i.run_id for i in infos]
    for name in STAGES:
        alone.run(alone.prepare(name, plan=plan))
    assert run_ids == [alone.prepare(name, plan=plan).run_id for name in STAGES]
    assert_same_runs(resumed, alone, run_ids)
    for run_id in run_ids:
        assert validate_run(resumed, resumed.catalog, run_id).ok


def test_plan_of_stages_samples_the_upstream_run_and_is_the_plan_their_replay_runs(spark,
                                                                                   storage):
    replay, _ = two_warehouses(spark, storage, seed=3, events=300)
    root = Path(replay.warehouse.root)
    where = ["--catalog", str(root.parent / "schemas"), "--warehouse", str(root)]
    cli = CliRunner()
    done = cli.invoke(app, ["replay", "ev_w_busy", "ev_w_max", *where])
    assert done.exit_code == 0, done.output
    result = cli.invoke(app, ["plan", "ev_w_max", "ev_w_busy", "--json", *where])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    upstream = replay.prepare("ev_w")  # (the run the replay made, complete)
    assert doc["upstream"] == "ev_w" and doc["statistics_run"] == upstream.run_id
    assert doc["estimates"]["rows"] == len(table_rows(replay, upstream.run_id, "output")) > 0
    assert sorted(q for c in doc["clusters"] for q in c["queries"]) == ["ev_w_busy", "ev_w_max"]
    # the shared run the replay made is the one the plan shows
    assert f"plan {doc['plan_hash'][:16]}" in done.output
    text = cli.invoke(app, ["plan", "ev_w_max", "ev_w_busy", *where])
    assert text.exit_code == 0, text.output
    assert f"statistics: the output of run {upstream.run_id} of ev_w" in text.output

"""Fused pipeline stages on Spark: a stage that keeps its upstream's key runs in its upstream's
tasks, and its run's tables (arrival numbers included) and manifest equal those of the separate
path (the upstream's complete run, then the stage over its output table), for random batch
plans, on both engines; the fused run validates against its own reference over the upstream's
output and against the composed reference over the recording."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_pipeline_replay import chain_replay, pipeline_catalog

from jobs.runs.pipeline_fusion import chain_plan
from jobs.runs.pipeline_stage import stage_over, upstream_run
from jobs.runs.replay import Replay, run_id_of
from jobs.runs.run_info import read_run
from jobs.runs.validate import reconcile_run, validate_run

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


def separate(replay: Replay, stage: str, plan: str) -> tuple[str, str]:
    """The separate path: a complete upstream run, then the stage's run over its output."""
    tag = uuid.uuid4().hex[:6]
    ctx = replay.context(stage)
    upstream = replay.prepare(ctx.query.upstream.query.name, plan=plan, run_id=f"up-{tag}")
    replay.run(upstream)
    info = stage_over(replay, ctx, upstream, f"stage-{tag}", run_id_of)
    assert not info.fused_with
    replay.run(info)
    return upstream.run_id, info.run_id


def assert_same_runs(replay: Replay, fused: tuple[str, str], apart: tuple[str, str]) -> None:
    for mine, theirs in zip(fused, apart, strict=True):
        for table in ("output", "late", "quarantine"):
            assert table_rows(replay, mine, table) == table_rows(replay, theirs, table), \
                (mine, table)
        assert manifest_rows(replay, mine) == manifest_rows(replay, theirs), mine
        ours, other = read_run(replay.warehouse, mine), read_run(replay.warehouse, theirs)
        assert ours.cuts == other.cuts and not ours.fused_with


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**16), rows=st.integers(7, 400),
       stage=st.sampled_from(["ev_w_alert", "ev_w_max"]))
def test_a_fused_stage_equals_the_separate_path_for_random_plans(spark, storage, seed, rows,
                                                                  stage):
    replay = chain_replay(spark, storage, seed, 500, 4, "driver")
    plan = f"rows:{rows}"
    info = replay.prepare(stage, plan=plan)
    assert info.fused_with  # the upstream had no complete run: fused
    replay.run(info)
    fused = (upstream_run(replay, read_run(replay.warehouse, info.run_id)), info.run_id)
    assert fused[0] is not None
    assert_same_runs(replay, fused, separate(replay, stage, plan))
    assert table_rows(replay, info.run_id, "output") or stage == "ev_w_alert"


def test_a_fused_run_on_spark_validates_and_is_reused(spark, storage):
    replay = chain_replay(spark, storage, 5, 700, 4, "spark")
    info = replay.prepare("ev_w_alert", plan="rows:90")
    assert info.fused_with
    replay.run(info)
    upstream = upstream_run(replay, read_run(replay.warehouse, info.run_id))
    assert upstream is not None
    for run_id in (upstream, info.run_id):
        report = validate_run(replay, replay.catalog, run_id)
        assert report.ok, (run_id, report.diff, report.late_mismatch, report.chain)
        assert reconcile_run(replay, run_id).ok
    assert {e["engine"] for e in read_run(replay.warehouse, info.run_id).engines} == {"spark"}
    assert_same_runs(replay, (upstream, info.run_id), separate(replay, "ev_w_alert", "rows:90"))
    # a second replay reuses both runs; a second stage over the complete upstream is not fused
    again = replay.prepare("ev_w_alert", plan="rows:90")
    assert again.run_id == info.run_id and not again.fused_with
    other = replay.prepare("ev_w_max", plan="rows:90")
    assert not other.fused_with


def test_plan_shows_which_stages_are_fused(tmp_path):
    plan = chain_plan(pipeline_catalog(tmp_path / "schemas").query("ev_w_alerts"))
    assert [s["fused_with_upstream"] for s in plan["stages"]] == [False, True, False]
    assert plan["fused"] == [["ev_w", "ev_w_alert"]]

"""The replay runner on Spark: output equals the reference and does not depend on the plan."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import events_table, small_catalog, write_commits
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.batch_plans import PlanError
from jobs.runs.replay import Replay
from jobs.runs.run_info import ReplayError
from jobs.runs.validate import validate_run
from jobs.warehouse import Warehouse


def output_rows(replay: Replay, run_id: str) -> list[tuple]:
    table = replay.storage.read_arrow(replay.warehouse.run_table(run_id, "output"))
    frame = table.drop(["batch"]).to_pandas()
    return sorted(tuple(r) for r in frame.astype(object).where(frame.notna(), None)
                  .itertuples(index=False))


def state_at(replay: Replay, run_id: str, batch: int) -> pd.DataFrame:
    manifest = replay.manifest(run_id).to_pandas().set_index("batch")
    version = int(manifest.loc[batch, "state_version"])
    state = replay.storage.read_arrow(replay.warehouse.run_table(run_id, "state"), version)
    frame = state.to_pandas()
    return frame.sort_values(list(frame.columns)).reset_index(drop=True)


def validated_run(replay: Replay, query: str, plan: str) -> str:
    """Replay ``query`` under ``plan`` (a run of its own), check it validates; its run id."""
    run_id = f"{query}-{plan.replace(':', '').replace(',', '-')}"  # run ids: no ':' or ','
    info = replay.prepare(query, plan=plan, run_id=run_id)
    replay.run(info)
    report = validate_run(replay, replay.catalog, info.run_id)
    assert report.ok, (report.diff, report.late_mismatch, report.reconciles)
    return info.run_id


def make_replay(spark, storage, n: int, commits: int, seed: int) -> Replay:
    root = Path(tempfile.mkdtemp(prefix="reprise-replay-"))
    catalog = small_catalog(root / "schemas")
    warehouse = Warehouse(root / "warehouse")
    table = events_table(np.random.default_rng(seed), n)
    write_commits(storage, warehouse.recording("ev"), table, commits)
    return Replay(spark, storage, warehouse, catalog)


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(n=st.integers(0, 120), commits=st.integers(1, 3), seed=st.integers(0, 10_000),
       cuts=st.lists(st.lists(st.integers(0, 120), max_size=4), min_size=2, max_size=2),
       data=st.data())
@pytest.mark.parametrize("engine", ["spark", "driver"])
def test_replay_equals_reference_under_random_plans(spark, storage, engine, n, commits, seed,
                                                    cuts, data):
    replay = make_replay(spark, storage, n, commits, seed)
    replay.engine = engine
    shared = data.draw(st.integers(0, n), label="shared cut")
    results, states = [], []
    for i, plan_cuts in enumerate(cuts):
        points = sorted({*(min(c, n) for c in plan_cuts), shared})
        points += [points[-1]] if i == 0 else []  # an empty batch in the first plan
        plan = "cuts:" + ",".join(map(str, points))
        info = replay.prepare("ev_w", plan=plan, run_id=f"plan{i}")
        replay.run(info)
        report = validate_run(replay, replay.catalog, info.run_id)
        assert report.ok, (report.diff, report.late_mismatch, report.reconciles)
        results.append(output_rows(replay, info.run_id))
        shared_batch = info.cuts.index(shared) - 1
        if shared_batch >= 0:
            states.append(state_at(replay, info.run_id, shared_batch))
    assert results[0] == results[1]
    if len(states) == 2:
        pd.testing.assert_frame_equal(states[0], states[1])


def test_one_event_batches_and_commit_plan_agree(spark, storage):
    replay = make_replay(spark, storage, n=12, commits=3, seed=3)
    single = replay.prepare("ev_w", plan="rows:1", run_id="single")
    by_commit = replay.prepare("ev_w", plan="commit", run_id="commit")
    assert single.batches == 12 and by_commit.batches == 3
    for info in (single, by_commit):
        replay.run(info)
        assert validate_run(replay, replay.catalog, info.run_id).ok
    assert output_rows(replay, "single") == output_rows(replay, "commit")
    manifest = replay.manifest("single").to_pandas()
    assert manifest["rows_in"].tolist() == [1] * 12 + [0]
    assert (manifest["late"] + manifest["quarantined"]).sum() <= 12


def test_manifest_reconciles_and_quarantines_rows_without_key_or_time(spark, storage):
    replay = make_replay(spark, storage, n=400, commits=4, seed=11)
    info = replay.prepare("ev_w", plan="rows:50")
    manifest = replay.run(info).to_pandas()
    quarantine = replay.storage.read_arrow(replay.warehouse.run_table(info.run_id, "quarantine"))
    reasons = set(quarantine.column("reason").to_pylist())
    assert reasons <= {"missing key column 'k'", "missing time column 'ts'"} and reasons
    assert quarantine.num_rows == manifest["quarantined"].sum()
    late = replay.storage.read_arrow(replay.warehouse.run_table(info.run_id, "late"))
    assert late.num_rows == manifest["late"].sum() > 0
    assert manifest["rows_in"].sum() == 400
    assert manifest["batch"].tolist() == list(range(info.batches + 1))
    assert (manifest["state_rows"][:-1] > 0).all() and (manifest["state_bytes"][:-1] > 0).all()


def test_rerun_of_a_finished_run_writes_nothing(spark, storage):
    replay = make_replay(spark, storage, n=50, commits=2, seed=5)
    info = replay.prepare("ev_w")
    replay.run(info)
    path = replay.warehouse.run_table(info.run_id, "output")
    version = replay.storage.version(path)
    replay.run(replay.prepare("ev_w"))
    assert replay.storage.version(path) == version


def test_time_plan_cuts_by_event_time(spark, storage):
    replay = make_replay(spark, storage, n=200, commits=2, seed=8)
    info = replay.prepare("ev_w", plan="time:20s")
    assert info.cuts == sorted(info.cuts) and info.cuts[0] == 0 and info.cuts[-1] == 200
    assert info.batches >= 5  # 200 events 0.7 s apart span 140 s
    replay.run(info)
    assert validate_run(replay, replay.catalog, info.run_id).ok


def test_run_id_reuse_with_other_plan_is_refused(spark, storage):
    replay = make_replay(spark, storage, n=20, commits=1, seed=1)
    replay.prepare("ev_w", plan="rows:5", run_id="r")
    with pytest.raises(ReplayError, match="uses plan"):
        replay.prepare("ev_w", plan="rows:7", run_id="r")
    with pytest.raises(PlanError, match="invalid batch plan"):
        replay.prepare("ev_w", plan="sometimes")


def test_batches_per_job_does_not_change_the_result(spark, storage):
    replay = make_replay(spark, storage, n=300, commits=3, seed=21)
    outputs, manifests = [], []
    for per_job in (1, 3, 50):
        replay.batches_per_job = per_job
        info = replay.prepare("ev_w", plan="rows:20", run_id=f"per-job-{per_job}")
        manifest = replay.run(info).to_pandas()
        outputs.append(output_rows(replay, info.run_id))
        manifests.append(manifest[["batch", "rows_in", "rows_out", "late", "quarantined",
                                   "state_rows"]])
    assert outputs[0] == outputs[1] == outputs[2]
    pd.testing.assert_frame_equal(manifests[0], manifests[1])
    pd.testing.assert_frame_equal(manifests[0], manifests[2])


@pytest.mark.parametrize("query", ["ev_w", "ev_q", "ev_t"])
def test_exchange_does_not_change_the_result(spark, storage, query):
    """Buckets fed by Spark's shuffle or by each task reading the files: the same run (``ev_t``
    reads a timestamp field: microseconds whichever way the events arrived)."""
    replay = make_replay(spark, storage, n=250, commits=3, seed=17)
    outputs, infos = [], []
    for exchange in ("spark", "direct"):
        replay.exchange = exchange
        info = replay.prepare(query, plan="rows:30", run_id=f"{query}-{exchange}")
        replay.run(info)
        assert info.exchange == exchange
        assert validate_run(replay, replay.catalog, info.run_id).ok
        outputs.append(output_rows(replay, info.run_id))
        infos.append(info)
    assert outputs[0] == outputs[1] and outputs[0]
    replay.exchange = "spark"  # a resumed run keeps the exchange it started with
    assert replay.prepare(query, run_id=infos[1].run_id).exchange == "direct"


def test_qre_replay_equals_reference_and_ignores_the_plan(spark, storage):
    replay = make_replay(spark, storage, n=150, commits=3, seed=9)  # null values are rejected
    results = []
    for plan in ("rows:7", "commit", "cuts:0,0,40,41,149"):
        run_id = validated_run(replay, "ev_q", plan)
        results.append(output_rows(replay, run_id))
        quarantine = replay.storage.read_arrow(
            replay.warehouse.run_table(run_id, "quarantine")).column("reason").to_pylist()
        assert "the query reads 'v' but the event has no value for it" in quarantine
    assert results[0] == results[1] == results[2] and results[0]


@pytest.mark.parametrize("query", ["ev_s", "ev_c"])
def test_session_and_count_replays_equal_reference_and_ignore_the_plan(spark, storage, query):
    replay = make_replay(spark, storage, n=200, commits=2, seed=13)
    results = []
    for plan in ("rows:9", "commit"):
        results.append(output_rows(replay, validated_run(replay, query, plan)))
    assert results[0] == results[1] and len(results[0]) > 1


def test_derived_column_sees_earlier_batches_and_ignores_the_plan(spark, storage):
    """``dv`` is a lag over arrival order: a batch's first event needs the previous batch."""
    replay = make_replay(spark, storage, n=160, commits=2, seed=21)
    results = []
    for plan in ("rows:5", "commit"):
        results.append(output_rows(replay, validated_run(replay, "ev_d", plan)))
    assert results[0] == results[1] and len(results[0]) > 3


def test_updates_mode_with_holistic_aggregates_equals_reference_for_each_plan(spark, storage):
    """Early rows depend on the plan (checked against the reference for that plan); the final
    rows do not."""
    replay = make_replay(spark, storage, n=200, commits=2, seed=5)
    finals = []
    for plan in ("rows:13", "commit"):
        run_id = validated_run(replay, "ev_u", plan)
        output = replay.storage.read_arrow(replay.warehouse.run_table(run_id, "output"))
        frame = output.to_pandas()
        assert (~frame["final"]).any()  # early rows were emitted
        final = frame[frame["final"]].drop(columns=["batch"])
        finals.append(sorted(map(repr, final.astype(object).where(final.notna(), None)
                                 .itertuples(index=False))))
    assert finals[0] == finals[1] and finals[0]

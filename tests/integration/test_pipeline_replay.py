"""Pipeline replays on Spark: replaying a downstream query replays its chain at one pinned
version and plan, each stage in its own run (reused when complete), downstream batch b reading
upstream batch b's output, and each stage validating against its reference over the upstream
run's actual output and the chain against the composed reference over the recording."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
from helpers import events_table, small_catalog, write_commits

from engine.catalog import load_catalog
from jobs.runs.pipeline_stage import upstream_run
from jobs.runs.replay import Replay
from jobs.runs.run_info import RunInfo, read_run
from jobs.runs.validate import reconcile_run, validate_run
from jobs.warehouse import Warehouse

HOURLY = """\
name: ev_w_max
kind: window
input: {query: ev_w}
query:
  window: {type: tumbling, size: 20s}
  aggregates: {windows: count(), top: max(hi), total: sum(s)}
"""
ALERT = """\
name: ev_w_alert
kind: qre
input: {query: ev_w}
output: every
query: "iter(eps(0), atom(n > 5, 1) | atom(n <= 5, 0), +)"
"""
OVER_ALERT = """\
name: ev_w_alerts
kind: select
input: {query: ev_w_alert}
where: value >= 1
query: {columns: [k, event_time, value]}
"""


def pipeline_catalog(root: Path):
    small_catalog(root)
    for name, text in (("ev_w_max", HOURLY), ("ev_w_alert", ALERT),
                       ("ev_w_alerts", OVER_ALERT)):
        (root / "queries" / f"{name}.yaml").write_text(text)
    return load_catalog(root)


def chain_replay(spark, storage, seed: int, events: int, commits: int, engine: str = ""
                 ) -> Replay:
    """A replay with the pipeline catalog over a new warehouse whose recording ``ev`` holds
    ``events`` random events (``seed``) in ``commits`` commits."""
    root = Path(tempfile.mkdtemp(prefix="reprise-pipeline-"))
    warehouse = Warehouse(root / "warehouse")
    write_commits(storage, warehouse.recording("ev"),
                  events_table(np.random.default_rng(seed), events), commits)
    return Replay(spark, storage, warehouse, pipeline_catalog(root / "schemas"), engine=engine)


def rows(storage, path: str) -> list[tuple]:
    table = storage.read_arrow(path).drop_columns(["batch"]).to_pylist()
    return sorted((tuple(sorted(r.items())) for r in table), key=repr)


def test_a_chain_replays_stage_by_stage_reuses_upstreams_and_validates(spark, storage):
    replay = chain_replay(spark, storage, seed=3, events=400, commits=4)
    warehouse, catalog = replay.warehouse, replay.catalog
    outputs = {}
    for plan in ("commit", "rows:37"):
        info = replay.prepare("ev_w_alerts", plan=plan)
        replay.run(info)
        alert = upstream_run(replay, info)
        window = upstream_run(replay, replay_info(warehouse, alert))
        assert window is not None and window.startswith("ev_w-v3-")
        for run_id in (window, alert, info.run_id):
            report = validate_run(replay, catalog, run_id)
            assert report.ok, (run_id, report.diff, report.late_mismatch, report.chain)
            assert (report.chain is None) == (run_id == window)
            assert reconcile_run(replay, run_id).ok
        # downstream batch b reads what upstream batch b emitted (its manifest's rows_out)
        for upstream, downstream in ((window, alert), (alert, info.run_id)):
            out = replay.manifest(upstream).column("rows_out").to_pylist()
            read = replay.manifest(downstream).column("rows_in").to_pylist()
            assert read[:len(out)] == out and read[len(out):] == [0]
        outputs[plan] = {q: rows(storage, warehouse.run_table(r, "output"))
                         for q, r in (("window", window), ("select", info.run_id))}
        # a second replay reuses every stage's completed run
        before = {r: storage.version(warehouse.run_table(r, "output"))
                  for r in (window, alert, info.run_id)}
        again = replay.prepare("ev_w_alerts", plan=plan)
        replay.run(again)
        assert again.run_id == info.run_id
        assert before == {r: storage.version(warehouse.run_table(r, "output")) for r in before}
    assert outputs["commit"]["window"] == outputs["rows:37"]["window"]
    assert unnumbered(outputs["commit"]["select"]) == unnumbered(outputs["rows:37"]["select"])
    assert outputs["commit"]["select"], "the alert fired on this recording"


def replay_info(warehouse: Warehouse, run_id: str | None) -> RunInfo:
    assert run_id is not None
    return read_run(warehouse, run_id)


def unnumbered(rows: list[tuple]) -> list[tuple]:
    """``rows`` without ``arrival_seq`` (it numbers the stream a stage reads)."""
    return sorted((tuple(v for v in r if v[0] != "arrival_seq") for r in rows), key=repr)


def test_validate_of_a_stage_says_when_the_fault_is_upstream(spark, storage):
    """An upstream run whose output was tampered with: the stage over it equals its own
    reference over that output, but not the composed reference over the recording."""
    replay = chain_replay(spark, storage, seed=8, events=300, commits=3)
    warehouse, catalog = replay.warehouse, replay.catalog
    upstream = replay.prepare("ev_w")
    replay.run(upstream)
    path = warehouse.run_table(upstream.run_id, "output")
    output = storage.read_arrow(path)
    tampered = output.set_column(output.schema.get_field_index("hi"), "hi",
                                 pc.add(output.column("hi"), 1))
    storage.write(tampered, path, mode="overwrite")
    info = replay.prepare("ev_w_max")
    replay.run(info)
    report = validate_run(replay, catalog, info.run_id)
    assert report.diff.ok and not report.late_mismatch and report.reconciles
    assert report.chain is not None and report.chain.missing and report.chain.extra
    assert not report.ok

"""The late and quarantined events of a Spark job's batches are committed in one commit, and a job
retried after a crash with other job sizes commits each of those events exactly once."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import events_table, small_catalog, write_commits

from jobs.runs.replay import Replay
from jobs.warehouse import Warehouse

PLAN = "rows:40"  # 400 events: 10 batches


class Crash(Exception):
    """Stands for the process dying after a job's table commits, before its manifest commit."""


def rows(replay: Replay, run_id: str, table: str) -> list[str]:
    frame = replay.storage.read_arrow(replay.warehouse.run_table(run_id, table)).to_pandas()
    frame = frame.astype(object).where(frame.notna(), None)  # (NaN != NaN)
    return sorted(map(repr, frame.itertuples(index=False)))


@pytest.fixture
def setup(spark, storage, tmp_path):
    catalog = small_catalog(tmp_path / "schemas")
    warehouse = Warehouse(tmp_path / "warehouse")
    write_commits(storage, warehouse.recording("ev"), events_table(np.random.default_rng(3), 400),
                  2)
    return spark, storage, warehouse, catalog


def test_each_job_commits_its_late_and_quarantined_events_once(setup):
    spark, storage, warehouse, catalog = setup
    replay = Replay(spark, storage, warehouse, catalog, batches_per_job=4)
    info = replay.prepare("ev_w", plan=PLAN, run_id="jobs-of-4")
    manifest = replay.run(info).to_pandas()
    assert info.batches == 10 and manifest["late"].sum() > 0 and manifest["quarantined"].sum() > 0
    jobs = len(range(0, info.batches, 4))  # batches 0-3, 4-7, 8-9 (and the flush)
    for table in ("late", "quarantine"):
        path = warehouse.run_table(info.run_id, table)
        assert storage.version(path) + 1 == jobs, table  # one commit per job, the first creates
    # output and state: a version per batch (the manifest names each batch's own)
    assert manifest["output_version"].is_unique


@pytest.mark.parametrize("first,then", [(2, 8), (8, 2), (3, 3)])
def test_a_job_retried_with_other_job_sizes_commits_each_event_once(setup, first, then):
    spark, storage, warehouse, catalog = setup
    straight = Replay(spark, storage, warehouse, catalog)
    straight.run(straight.prepare("ev_w", plan=PLAN, run_id="straight"))

    def crash(run_id: str, group: list[int]) -> None:
        raise Crash(group)

    crashing = Replay(spark, storage, warehouse, catalog, batches_per_job=first,
                      before_manifest=crash)
    run_id = f"torn-{first}-{then}"
    with pytest.raises(Crash):
        crashing.run(crashing.prepare("ev_w", plan=PLAN, run_id=run_id))
    resumed = Replay(spark, storage, warehouse, catalog, batches_per_job=then)
    manifest = resumed.run(resumed.prepare("ev_w", plan=PLAN, run_id=run_id))
    assert manifest.column("batch").to_pylist() == list(range(11))
    for table in ("output", "late", "quarantine"):
        assert rows(resumed, run_id, table) == rows(straight, "straight", table), table


def test_tables_committed_in_threads_equal_tables_committed_in_order(setup, monkeypatch):
    """A storage whose commits wait (remote, delta-spark) commits the tables side by side; a
    local delta-rs table one after another. Both give every table and the manifest alike."""
    spark, storage, warehouse, catalog = setup
    assert storage.name == "delta-rs" and storage.commits_wait("s3://bucket/table")
    assert not storage.commits_wait(str(warehouse.root))
    made = {}
    for waits in (False, True):
        monkeypatch.setattr(storage, "commits_wait", lambda path, waits=waits: waits)
        replay = Replay(spark, storage, warehouse, catalog, batches_per_job=4)
        info = replay.prepare("ev_w", plan=PLAN, run_id=f"threads-{waits}")
        replay.run(info)
        made[waits] = {t: rows(replay, info.run_id, t)
                       for t in ("output", "late", "quarantine", "state")}
        manifest = replay.manifest(info.run_id).to_pandas()
        made[waits]["versions"] = manifest[["state_version", "output_version"]].values.tolist()
    assert made[False] == made[True]
    assert made[False]["output"] and made[False]["late"]

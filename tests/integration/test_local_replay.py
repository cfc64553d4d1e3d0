"""A small replay runs its buckets in the driver process, without starting Spark."""

from __future__ import annotations

import dataclasses

import pyarrow.parquet as pq
import pytest
from test_replay import make_replay, output_rows

from jobs.keyed import bucket_of_file
from jobs.lazy_spark import LazySpark
from jobs.replay import Replay
from jobs.settings import Settings
from jobs.storage.delta_rs import DeltaRsStorage
from jobs.validate import validate_run


def runners(spark, storage) -> tuple[Replay, Replay, LazySpark]:
    """A small replay's runner on the session, one that replays it without Spark (in the
    driver), and that one's session, started only if something asks for it."""
    replay = make_replay(spark, storage, n=200, commits=3, seed=8)
    lazy = LazySpark(Settings(spark_master="local[2]"))
    local = dataclasses.replace(replay, spark=lazy, storage=DeltaRsStorage(lazy),
                                settings=Settings(local_events=1000))
    return replay, local, lazy


def test_small_replay_runs_without_spark_and_equals_the_spark_run(spark, storage):
    replay, local, lazy = runners(spark, storage)
    outputs = []
    for name, runner in (("local", local), ("spark", replay)):
        info = runner.prepare("ev_q", plan="rows:30", run_id=f"small-{name}")
        runner.run(info)
        outputs.append(output_rows(replay, info.run_id))
        assert validate_run(replay, replay.catalog, info.run_id).ok
    assert not lazy.started  # the local run never started a session of its own
    assert outputs[0] == outputs[1] and outputs[0]


@pytest.mark.parametrize("query", ["ev_q", "ev_w", "ev_s"])
def test_a_driver_run_writes_each_buckets_state_as_its_spark_task_does(spark, storage, query):
    """In the driver the buckets step as one; after every batch each bucket's state file holds
    the rows its own Spark task writes (a later Spark job of the run reads them per bucket)."""
    replay, local, lazy = runners(spark, storage)
    states = []
    for name, runner in (("local", local), ("spark", replay)):
        info = runner.prepare(query, plan="rows:30", run_id=f"state-{query}-{name}")
        path = replay.warehouse.run_table(info.run_id, "state")
        by_batch = {}
        for row in runner.run(info).to_pylist()[:-1]:  # (the flush commits no state)
            files = replay.storage.live_files(path, row["state_version"])
            by_batch[row["batch"]] = {
                bucket_of_file(f.path): sorted(map(repr, pq.read_table(f.path).to_pylist()))
                for f in files}
        states.append(by_batch)
    assert not lazy.started
    assert len(states[1]) == 7 and all(len(files) == 2 for files in states[1].values())
    assert states[0] == states[1]

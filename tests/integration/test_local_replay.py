"""A small replay runs its buckets in the driver process, without starting Spark."""

from __future__ import annotations

import dataclasses

from test_replay import make_replay, output_rows

from jobs.lazy_spark import LazySpark
from jobs.settings import Settings
from jobs.storage.delta_rs import DeltaRsStorage
from jobs.validate import validate_run


def test_small_replay_runs_without_spark_and_equals_the_spark_run(spark, storage):
    replay = make_replay(spark, storage, n=200, commits=3, seed=8)
    lazy = LazySpark(Settings(spark_master="local[2]"))
    local = dataclasses.replace(replay, spark=lazy, storage=DeltaRsStorage(lazy),
                                settings=Settings(local_events=1000))
    outputs = []
    for name, runner in (("local", local), ("spark", replay)):
        info = runner.prepare("ev_q", plan="rows:30", run_id=f"small-{name}")
        runner.run(info)
        outputs.append(output_rows(replay, info.run_id))
        assert validate_run(replay, replay.catalog, info.run_id).ok
    assert not lazy.started  # the local run never started a session of its own
    assert outputs[0] == outputs[1] and outputs[0]

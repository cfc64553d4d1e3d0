"""A small replay runs its buckets in the driver process, without starting Spark."""

from __future__ import annotations

import dataclasses
import json

import pyarrow as pa
import pytest
from test_replay import make_replay, output_rows

from jobs.execution import direct_exchange
from jobs.execution.bucketing import bucket_groups, key_buckets
from jobs.execution.step_files import buckets_of_file
from jobs.runs.listing import summarize
from jobs.runs.replay import Replay
from jobs.runs.validate import validate_run
from jobs.runtime.lazy_session import LazySpark
from jobs.settings import Settings, SettingsError
from jobs.storage.delta_rs import DeltaRsStorage


def runners(spark, storage, n: int = 200) -> tuple[Replay, Replay, LazySpark]:
    """A small replay's runner on the session, one that replays it without Spark (in the
    driver), and that one's session, started only if something asks for it."""
    replay = make_replay(spark, storage, n=n, commits=3, seed=8)
    lazy = LazySpark(Settings(spark_master="local[2]"))
    local = dataclasses.replace(replay, spark=lazy, storage=DeltaRsStorage(lazy),
                                settings=Settings(), engine="auto")
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


def bucket_rows(replay: Replay, query: str, run_id: str, version: int, buckets: int
                ) -> dict[int, list[str]]:
    """The rows of the run's state table at ``version``, by the bucket of their key."""
    table = replay.storage.read_arrow(replay.warehouse.run_table(run_id, "state"),
                                      version=version)
    of = key_buckets(table.column(replay.context(query).operator.key), buckets)
    return {b: sorted(map(repr, table.filter(pa.array(of == b)).to_pylist()))
            for b in range(buckets) if (of == b).any()}


@pytest.mark.parametrize("query", ["ev_q", "ev_w", "ev_s"])
def test_a_driver_run_writes_one_state_file_a_batch_with_the_rows_of_the_spark_tasks(
        spark, storage, query):
    """In the driver the buckets step as one and each batch writes one state file of every
    bucket; its rows are those the Spark tasks of the buckets write, each its own file."""
    replay, local, lazy = runners(spark, storage)
    states, files = [], []
    for name, runner in (("local", local), ("spark", replay)):
        info = runner.prepare(query, plan="rows:30", run_id=f"state-{query}-{name}")
        path = replay.warehouse.run_table(info.run_id, "state")
        manifest = runner.run(info).to_pylist()[:-1]  # (the flush commits no state)
        files.append([sorted((buckets_of_file(f.path, info.buckets) for f in
                              replay.storage.live_files(path, row["state_version"])),
                             key=str) for row in manifest])
        states.append([bucket_rows(replay, query, info.run_id, row["state_version"],
                                   info.buckets) for row in manifest])
    assert not lazy.started
    assert len(files[0]) == 7 and all(live == [range(2)] for live in files[0])
    assert all(live == [range(0, 1), range(1, 2)] for live in files[1])
    assert states[0] == states[1]


class Stop(Exception):
    pass


@pytest.mark.parametrize("query", ["ev_q", "ev_w", "ev_s"])
def test_spark_tasks_go_on_from_a_state_file_of_every_bucket(spark, storage, query):
    """A run whose first jobs ran in the driver (state files of every bucket; the second job
    stopped before its manifest commit) goes on in Spark tasks, one per bucket: each bucket
    reads its part of that file and writes a file of its own in each batch of the job (one
    event a batch: one bucket has none), and the first commit that is not the earlier
    attempt's drops the file of every bucket; the run then equals a run made in Spark from the
    start, batch for batch."""
    replay, local, _ = runners(spark, storage, n=40)

    def stop_at_second_job(run_id: str, group: list[int]) -> None:
        if group[0] > 0:
            raise Stop

    mixed = dataclasses.replace(local, batches_per_job=2, before_manifest=stop_at_second_job)
    info = mixed.prepare(query, plan="rows:1", run_id=f"mixed-{query}")
    with pytest.raises(Stop):
        mixed.run(info)
    path = replay.warehouse.run_table(info.run_id, "state")
    assert [buckets_of_file(f.path, 2) for f in replay.storage.live_files(path)] == [range(2)]
    manifests = [replay.run(info).to_pylist()]  # (its first job: batches 2 to the end)
    straight = replay.prepare(query, plan="rows:1", run_id=f"straight-{query}")
    manifests.append(replay.run(straight).to_pylist())
    assert output_rows(replay, info.run_id) == output_rows(replay, straight.run_id)
    for kind in ("late", "quarantine"):
        assert (replay.storage.read_arrow(replay.warehouse.run_table(info.run_id, kind))
                .num_rows == replay.storage.read_arrow(
                    replay.warehouse.run_table(straight.run_id, kind)).num_rows)
    states = [[bucket_rows(replay, query, run, row["state_version"], info.buckets)
               for row in rows[:-1]] for run, rows in zip((info.run_id, straight.run_id),
                                                          manifests, strict=True)]
    assert states[0] == states[1]
    assert sorted((buckets_of_file(f.path, 2) for f in replay.storage.live_files(path)),
                  key=str) == [range(0, 1), range(1, 2)]
    assert validate_run(replay, replay.catalog, info.run_id).ok


#: How the first and the later jobs of a run group its 8 buckets into tasks (tasks per job):
#: one bucket a task (as runs made before tasks stepped groups), the session's cores, three
#: groups that straddle the cores' groups.
GROUPINGS = {"one": 8, "cores": None, "three": 3}


@pytest.mark.parametrize(("first", "then"), [("one", "cores"), ("cores", "one"),
                                             ("three", "cores")])
def test_a_run_goes_on_with_other_groups_of_buckets_per_task(spark, storage, monkeypatch,
                                                             first, then):
    """A run whose first job's tasks stepped the buckets in one grouping (state files of
    those groups; the second job stopped before its manifest commit) goes on with tasks of
    another grouping: each task reads its buckets' rows of those files, and the run equals a
    run made in one grouping from the start, batch for batch, state by bucket included."""
    from test_key_layout import make_replay as replay_of
    from test_key_layout import many_keys

    replay = dataclasses.replace(replay_of(spark, storage, many_keys(1200, 120, seed=3),
                                           commits=3),
                                 engine="spark", settings=Settings(buckets=8,
                                                                   exchange="direct"))
    cores = direct_exchange.task_groups

    def grouped(name: str) -> None:
        tasks = GROUPINGS[name]
        monkeypatch.setattr(direct_exchange, "task_groups", cores if tasks is None else
                            lambda _, buckets: bucket_groups(buckets, tasks))

    def stop_at_second_job(run_id: str, group: list[int]) -> None:
        if group[0] > 0:
            raise Stop

    grouped(first)
    mixed = dataclasses.replace(replay, batches_per_job=2, before_manifest=stop_at_second_job)
    info = mixed.prepare("ev_w", plan="rows:150", run_id=f"groups-{first}-{then}")
    with pytest.raises(Stop):
        mixed.run(info)
    path = replay.warehouse.run_table(info.run_id, "state")
    expected = bucket_groups(8, GROUPINGS[first] or spark.sparkContext.defaultParallelism)
    assert sorted((buckets_of_file(f.path, 8) for f in replay.storage.live_files(path)),
                  key=lambda r: r.start) == expected
    grouped(then)
    manifests = [replay.run(info).to_pylist()]
    straight = replay.prepare("ev_w", plan="rows:150", run_id=f"straight-{first}-{then}")
    manifests.append(replay.run(straight).to_pylist())
    assert output_rows(replay, info.run_id) == output_rows(replay, straight.run_id)
    states = [[bucket_rows(replay, "ev_w", run, row["state_version"], 8) for row in rows[:-1]]
              for run, rows in zip((info.run_id, straight.run_id), manifests, strict=True)]
    assert states[0] == states[1] and len(states[0]) == 8
    assert validate_run(replay, replay.catalog, info.run_id).ok


@pytest.mark.parametrize("query", ["ev_q", "ev_w", "ev_s"])
def test_a_run_handed_over_to_spark_mid_run_equals_the_driver_and_the_spark_runs(
        spark, storage, query):
    """A run that starts in the driver while Spark starts in the background and hands its
    later batch groups to Spark (forced at batch 4 by ``handover_at``) writes what a run made
    only in the driver and one made only on Spark write, and its run.json and ``reprise runs``
    say which engine ran which batches."""
    replay, local, lazy = runners(spark, storage, n=120)
    forced = Settings(spark_master="local[2]", handover_at=4)
    runs = {"driver": dataclasses.replace(local, engine="driver", batches_per_job=2),
            "spark": dataclasses.replace(replay, engine="spark", batches_per_job=2),
            "handover": dataclasses.replace(local, settings=forced, batches_per_job=2)}
    outputs, engines = {}, {}
    for name, runner in runs.items():
        info = runner.prepare(query, plan="rows:15", run_id=f"handover-{query}-{name}")
        runner.run(info)
        outputs[name] = output_rows(replay, info.run_id)
        run_json = json.loads((replay.warehouse.run_dir(info.run_id) / "run.json").read_text())
        engines[name] = [(e["engine"], *e["batches"]) for e in run_json["engines"]]
        assert validate_run(replay, replay.catalog, info.run_id).ok
    assert outputs["handover"] == outputs["driver"] == outputs["spark"] and outputs["driver"]
    last = info.batches  # (the end-of-input flush)
    assert engines == {"driver": [("driver", 0, last)], "spark": [("spark", 0, last)],
                       "handover": [("driver", 0, 3), ("spark", 4, last)]}
    assert lazy.started  # started in the background by the hand-over, then used
    assert summarize(replay.warehouse, f"handover-{query}-handover").engines == \
        f"driver 0-3, spark 4-{last}"


def test_a_run_whose_spark_fails_to_start_in_the_background_goes_on_in_the_driver(
        spark, storage):
    """A hand-over whose Spark does not start (here a master with no threads) leaves the run in
    the driver: the run ends, equal to a driver run."""
    replay, local, _ = runners(spark, storage, n=60)
    broken = LazySpark(Settings(spark_master="local[0]"))
    runner = dataclasses.replace(local, spark=broken, storage=DeltaRsStorage(broken),
                                 settings=Settings(buckets=2, handover_at=1), batches_per_job=1)
    info = runner.prepare("ev_w", plan="rows:15", run_id="handover-broken")
    runner.run(info)
    straight = dataclasses.replace(local, engine="driver")
    plain = straight.prepare("ev_w", plan="rows:15", run_id="handover-plain")
    straight.run(plain)
    assert output_rows(replay, info.run_id) == output_rows(replay, plain.run_id)
    assert [(e["engine"], *e["batches"]) for e in info.engines] == [
        ("driver", 0, info.batches)]
    assert isinstance(broken.start_error(), SettingsError) and not broken.started

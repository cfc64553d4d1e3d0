"""The end-of-input flush joins the last Spark job on the spark exchange too."""

from __future__ import annotations

from test_replay import make_replay, output_rows

from jobs.runs.validate import validate_run


def test_spark_exchange_flushes_every_bucket_in_the_last_job(spark, storage):
    """The last batch holds one event, so one bucket has no event in the last job but holds
    open windows: they are still emitted, in the same job (one manifest commit per job)."""
    replay = make_replay(spark, storage, n=120, commits=2, seed=3)
    outputs = []
    for exchange in ("spark", "direct"):
        replay.exchange = exchange
        info = replay.prepare("ev_w", plan="cuts:119", run_id=f"flush-{exchange}")
        manifest = replay.run(info)
        assert manifest.num_rows == 3  # two batches and the flush
        manifest_path = replay.warehouse.run_table(info.run_id, "manifest")
        assert replay.storage.version(manifest_path) == 0  # one job: one manifest commit
        assert validate_run(replay, replay.catalog, info.run_id).ok
        outputs.append(output_rows(replay, info.run_id))
    assert outputs[0] == outputs[1] and outputs[0]

"""Through the sensor: a new recording version makes the replay asset continue its run."""

from __future__ import annotations

import dagster as dg
from helpers import vitals_only_catalog

from jobs.recordings.store import generate_recording
from orchestration.definitions import build_definitions

REPLAY = dg.AssetKey(["replays", "vitals_hr_1m"])



def test_sensor_run_continues_the_replay_and_its_checks_pass(spark, storage, catalog, warehouse,
                                                            monkeypatch, tmp_path):
    monkeypatch.setenv("REPRISE_WAREHOUSE", str(warehouse.root))
    generate_recording(storage, warehouse, catalog, "vitals", keys=5, events=2_000, seed=2,
                       commits=2)
    job = dg.define_asset_job("vitals_only", selection=dg.AssetSelection.assets(
        dg.AssetKey(["recordings", "vitals"]), REPLAY))
    defs = dg.Definitions.merge(build_definitions(str(vitals_only_catalog(tmp_path))),
                                dg.Definitions(jobs=[job]))
    instance = dg.DagsterInstance.ephemeral()
    job = defs.resolve_job_def("vitals_only")
    first = job.execute_in_process(instance=instance)
    assert first.success
    (before,) = [e.materialization.metadata for e in first.get_asset_materialization_events()
                 if e.asset_key == REPLAY]

    sensor = defs.resolve_sensor_def("new_recording_versions")

    def tick(cursor):
        with dg.build_sensor_context(cursor=cursor, resources=defs.resources,
                                     definitions=defs, instance=instance) as ctx:
            return sensor(ctx)

    baseline = tick(None)
    vitals = warehouse.recording("vitals")
    storage.write(storage.read_arrow(vitals).slice(0, 40), vitals, mode="append")
    (request,) = tick(baseline.cursor).run_requests
    assert request.tags["reprise/mode"] == "continue"
    result = job.execute_in_process(instance=instance, asset_selection=request.asset_selection)
    assert result.success
    (after,) = [e.materialization.metadata for e in result.get_asset_materialization_events()
                if e.asset_key == REPLAY]
    assert after["run_id"].value == before["run_id"].value  # the same run, continued
    assert after["segment"].value == 1
    assert (after["segment_from_version"].value, after["segment_to_version"].value) == (1, 2)
    assert after["new_events"].value == 40
    assert after["rows_in"].value == 2_040
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {"matches_reference": True, "quality": True, "manifest_reconciles": True,
                      "equals_standalone": True, "changes_since_previous": True}

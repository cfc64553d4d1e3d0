"""The replays of one recording form one subsettable multi-asset: several materialised in one
run share the scan (the plan is their metadata) and equal their standalone replays; one
materialised alone runs alone."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from jobs.recordings.store import generate_recording
from orchestration.definitions import build_definitions

ROOT = Path(__file__).resolve().parents[2]
VITALS = dg.AssetKey(["recordings", "vitals"])


def run_selection(defs, name: str, keys: list[dg.AssetKey], instance):
    job = dg.define_asset_job(name, selection=dg.AssetSelection.assets(*keys))
    return dg.Definitions.merge(defs, dg.Definitions(jobs=[job])).resolve_job_def(
        name).execute_in_process(instance=instance, raise_on_error=False)


def test_subset_of_replays_shares_and_one_runs_alone(spark, storage, catalog, warehouse,
                                                     monkeypatch):
    monkeypatch.setenv("REPRISE_WAREHOUSE", str(warehouse.root))
    generate_recording(storage, warehouse, catalog, "vitals", keys=4, events=1_500, seed=2,
                       commits=2, replace=True)
    defs = build_definitions(str(ROOT / "schemas"))
    graph = defs.resolve_asset_graph()
    hr, low = (dg.AssetKey(["replays", n]) for n in ("vitals_hr_1m", "vitals_low_spo2"))
    assert graph.get(hr).group_name == "window" and graph.get(low).group_name != "window"
    instance = dg.DagsterInstance.ephemeral()

    result = run_selection(defs, "two_vitals", [VITALS, hr, low], instance)
    assert result.success
    meta = {e.asset_key: e.materialization.metadata
            for e in result.get_asset_materialization_events()}
    assert meta[hr]["shared"].value and meta[low]["shared"].value
    assert meta[hr]["plan_hash"].value == meta[low]["plan_hash"].value
    for key in (hr, low):  # a first replay is its run's segment 0 (before: no segment keys)
        segment = {k: meta[key][k].value for k in ("segment", "segment_from_version",
                                                   "segment_to_version", "new_events",
                                                   "new_batches", "fresh_because")}
        assert segment == {"segment": 0, "segment_from_version": -1, "segment_to_version": 1,
                           "new_events": 1_500, "new_batches": meta[key]["batches"].value,
                           "fresh_because": "no completed run"}
    clusters = meta[hr]["plan_clusters"].value
    assert sorted(q for c in clusters for q in c["queries"]) == ["vitals_hr_1m",
                                                                 "vitals_low_spo2"]
    checks = {(e.asset_key, e.check_name): e for e in result.get_asset_check_evaluations()}
    for key in (hr, low):
        assert checks[key, "equals_standalone"].passed, checks[key, "equals_standalone"].metadata
        assert checks[key, "matches_reference"].passed

    alone = run_selection(defs, "one_vital", [hr], instance)
    assert alone.success
    (event,) = alone.get_asset_materialization_events()
    assert event.asset_key == hr and not event.materialization.metadata["shared"].value


def test_stages_over_one_upstream_share_its_output_and_one_runs_alone(spark, storage, catalog,
                                                                     warehouse, monkeypatch):
    from jobs.runs.pipeline_stage import upstream_read
    from jobs.runs.replay import Replay
    from jobs.runs.run_info import read_run
    from jobs.shared.standalone_compare import STANDALONE_SUFFIX

    monkeypatch.setenv("REPRISE_WAREHOUSE", str(warehouse.root))
    generate_recording(storage, warehouse, catalog, "vitals", keys=4, events=1_500, seed=4,
                       commits=2, replace=True)
    defs = build_definitions(str(ROOT / "schemas"))
    graph = defs.resolve_asset_graph()
    minutes = dg.AssetKey(["replays", "vitals_hr_1m"])
    alert, hourly = (dg.AssetKey(["replays", n])
                     for n in ("vitals_tachy_alert", "vitals_hr_hourly_peak"))
    for stage in (alert, hourly):  # each keeps its key, lineage and group
        assert graph.get(stage).parent_keys == {minutes}
    assert graph.get(hourly).group_name == "window" and graph.get(alert).group_name == "qre"
    instance = dg.DagsterInstance.ephemeral()

    result = run_selection(defs, "two_stages", [VITALS, minutes, alert, hourly], instance)
    assert result.success
    events = {e.asset_key: e for e in result.get_asset_materialization_events()}
    meta = {key: e.materialization.metadata for key, e in events.items()}
    # one step materialised both stages, as one shared run over one read of the upstream run
    assert events[alert].step_key == events[hourly].step_key == "stages_over_vitals_hr_1m"
    upstream_run = meta[minutes]["run_id"].value
    for key in (alert, hourly):
        assert meta[key]["shared"].value, meta[key]
        assert meta[key]["upstream_run_id"].value == upstream_run
        assert meta[key]["upstream_output_reads"].value == 1
    assert meta[alert]["plan_hash"].value == meta[hourly]["plan_hash"].value
    clusters = meta[alert]["plan_clusters"].value
    assert sorted(q for c in clusters for q in c["queries"]) == ["vitals_hr_hourly_peak",
                                                                 "vitals_tachy_alert"]
    runner = Replay(spark, storage, warehouse, catalog)
    reads = {upstream_read(runner, read_run(warehouse, meta[key]["run_id"].value))
             for key in (alert, hourly)}
    (read,) = reads  # both input tables were written from the same output version
    assert read[0] == upstream_run and read[1] is not None
    checks = {(e.asset_key, e.check_name): e for e in result.get_asset_check_evaluations()}
    for key in (alert, hourly):
        for name in ("equals_standalone", "matches_reference", "quality", "manifest_reconciles"):
            assert checks[key, name].passed, (key, name, checks[key, name].metadata)
        run_id = meta[key]["run_id"].value  # compared with a replay of the stage alone
        assert (checks[key, "equals_standalone"].metadata["standalone_run_id"].value
                == f"{run_id}{STANDALONE_SUFFIX}")
        assert checks[key, "equals_standalone"].metadata["differences"].value == []

    alone = run_selection(defs, "one_stage", [hourly], instance)
    assert alone.success
    (event,) = alone.get_asset_materialization_events()
    assert event.asset_key == hourly and not event.materialization.metadata["shared"].value
    assert event.materialization.metadata["run_id"].value == meta[hourly]["run_id"].value

    # a new recording version: the sensor requests both stages; each continues its own run
    sensor = defs.resolve_sensor_def("new_recording_versions")

    def tick(cursor):
        with dg.build_sensor_context(cursor=cursor, resources=defs.resources, definitions=defs,
                                     instance=instance) as ctx:
            return sensor(ctx)

    baseline = tick(None)
    vitals = warehouse.recording("vitals")
    storage.write(storage.read_arrow(vitals).slice(0, 30), vitals, mode="append")
    (request,) = tick(baseline.cursor).run_requests
    assert {VITALS, minutes, alert, hourly} <= set(request.asset_selection)
    later = run_selection(defs, "two_stages_later", [VITALS, minutes, alert, hourly], instance)
    assert later.success
    after = {e.asset_key: e.materialization.metadata
             for e in later.get_asset_materialization_events()}
    for key in (alert, hourly):  # the shared run's, not its standalone twin's, continued
        assert after[key]["run_id"].value == meta[key]["run_id"].value
        assert not after[key]["shared"].value and after[key]["segment"].value == 1
    assert all(e.passed for e in later.get_asset_check_evaluations()), [
        (e.asset_key, e.check_name) for e in later.get_asset_check_evaluations() if not e.passed]


def test_stages_materialised_without_their_upstream_replay_it_first(spark, storage, catalog,
                                                                    warehouse, monkeypatch):
    """The two stages keep vitals_hr_1m's key (a replay of one alone runs fused with it); with
    no run of vitals_hr_1m yet, their shared materialisation replays it first, then shares its
    output."""
    from jobs.runs.pipeline_fusion import fusable
    from jobs.runs.replay import Replay

    monkeypatch.setenv("REPRISE_WAREHOUSE", str(warehouse.root))
    generate_recording(storage, warehouse, catalog, "vitals", keys=3, events=900, seed=6,
                       commits=1, replace=True)
    names = ("vitals_tachy_alert", "vitals_hr_hourly_peak")
    assert all(fusable(catalog.query(n)) for n in names)
    defs = build_definitions(str(ROOT / "schemas"))
    keys = [dg.AssetKey(["replays", n]) for n in names]
    result = run_selection(defs, "stages_only", keys, dg.DagsterInstance.ephemeral())
    assert result.success
    meta = {e.asset_key: e.materialization.metadata
            for e in result.get_asset_materialization_events()}
    assert set(meta) == set(keys)
    upstream = Replay(spark, storage, warehouse, catalog).prepare("vitals_hr_1m")
    for key in keys:
        assert meta[key]["shared"].value and meta[key]["upstream_output_reads"].value == 1
        assert meta[key]["upstream_run_id"].value == upstream.run_id
    checks = result.get_asset_check_evaluations()
    assert len(checks) == 10 and all(e.passed for e in checks), [
        (e.asset_key, e.check_name) for e in checks if not e.passed]

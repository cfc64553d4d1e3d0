"""Dagster definitions built from the catalog: validation, materialization, checks, sensor."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, write_deltalake

from jobs.recordings.store import generate_recording
from orchestration.automation import ALL_JOB
from orchestration.definitions import build_definitions

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"vitals": (10, 6_000), "ticks": (5, 3_000), "ads": (20, 3_000)}


def write_samples(storage, warehouse, catalog) -> None:
    for kind, (keys, events) in SMALL.items():
        generate_recording(storage, warehouse, catalog, kind, keys=keys, events=events, seed=3,
                           commits=3, replace=True)


@pytest.fixture
def sample_defs(spark, storage, catalog, warehouse, monkeypatch):
    """Definitions over the sample catalog and a fresh warehouse holding small recordings."""
    monkeypatch.setenv("REPRISE_WAREHOUSE", str(warehouse.root))
    write_samples(storage, warehouse, catalog)
    return build_definitions(str(ROOT / "schemas"))


def check_results(result) -> dict[tuple[str, str], dg.AssetCheckEvaluation]:
    return {(e.asset_key.path[-1], e.check_name): e for e in result.get_asset_check_evaluations()}


def test_dagster_definitions_validate_passes():
    done = subprocess.run([str(Path(sys.executable).parent / "dagster"), "definitions",
                           "validate", "-w", "workspace.yaml"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passed validation" in done.stdout + done.stderr


def test_assets_lineage_kinds_and_groups(sample_defs):
    graph = sample_defs.resolve_asset_graph()
    replay = graph.get(dg.AssetKey(["replays", "vitals_hr_1m"]))
    assert dg.AssetKey(["recordings", "vitals"]) in replay.parent_keys
    assert replay.group_name == "window"
    assert {"spark", "delta"} <= set(replay.kinds)
    checks = {k.name for k in graph.asset_check_keys if k.asset_key == replay.key}
    assert checks == {"matches_reference", "quality", "manifest_reconciles", "equals_standalone",
                      "changes_since_previous"}
    for stage in ("vitals_tachy_alert", "vitals_hr_hourly_peak"):  # pipelines
        node = graph.get(dg.AssetKey(["replays", stage]))
        assert node.parent_keys == {replay.key}
        assert {k.name for k in graph.asset_check_keys if k.asset_key == node.key} == checks


def test_materialize_catalog_checks_pass_and_corruption_is_caught(sample_defs, warehouse):
    instance = dg.DagsterInstance.ephemeral()
    result = sample_defs.resolve_job_def(ALL_JOB).execute_in_process(instance=instance)
    assert result.success
    checks = check_results(result)
    replays = [k for k in sample_defs.resolve_asset_graph().get_all_asset_keys()
               if k.path[0] == "replays"]
    shareable = [k for k in replays if (k.path[-1], "equals_standalone") in checks]
    assert len(replays) >= 4 and len(checks) == 4 * len(replays) + len(shareable)
    assert len(shareable) >= 4
    assert all(e.passed for e in checks.values()), {
        k: e.metadata for k, e in checks.items() if not e.passed}
    meta = {e.asset_key.path[-1]: e.materialization.metadata
            for e in result.get_asset_materialization_events()}
    assert meta["vitals_hr_1m"]["rows_in"].value == 6_000
    assert meta["vitals"]["delta_version"].value == 2
    assert "state rows" in meta["vitals_hr_1m"]["across_batches"].value

    # Change one output row after the replay: the reference check must fail and show it.
    run_id = meta["vitals_hr_1m"]["run_id"].value
    path = warehouse.run_table(run_id, "output")
    table = DeltaTable(path).to_pyarrow_table()
    first = pc.equal(pa.array(range(table.num_rows)), 0)
    bumped = pc.if_else(first, pc.add(table["readings"], 1000), table["readings"])
    write_deltalake(path, table.set_column(table.schema.get_field_index("readings"), "readings",
                                           bumped), mode="overwrite")
    check_job = dg.define_asset_job(
        "reference_only", selection=dg.AssetSelection.checks(
            dg.AssetCheckKey(dg.AssetKey(["replays", "vitals_hr_1m"]), "matches_reference")))
    defs = dg.Definitions.merge(sample_defs, dg.Definitions(jobs=[check_job]))
    result = defs.resolve_job_def("reference_only").execute_in_process(
        instance=instance, raise_on_error=False)
    (evaluation,) = result.get_asset_check_evaluations()
    assert not evaluation.passed
    assert evaluation.metadata["different"].value == 1
    (mismatch,) = evaluation.metadata["first_mismatches"].value
    assert mismatch["kind"] == "different"
    assert mismatch["replay"]["readings"] == mismatch["reference"]["readings"] + 1000


def test_quality_suite_can_fail(spark, backend_storage, catalog, warehouse, monkeypatch,
                                tmp_path):
    storage = backend_storage  # (each backend in turn)
    schemas = tmp_path / "schemas"
    shutil.copytree(ROOT / "schemas", schemas)
    for extra in ("ticks_1m.yaml", "ads_10s.yaml"):
        (schemas / "queries" / extra).unlink()
    query = (schemas / "queries" / "vitals_hr_1m.yaml").read_text()
    (schemas / "queries" / "vitals_hr_1m.yaml").write_text(query.replace(
        "{column: hr_avg, min_value: 20, max_value: 250}",
        "{column: hr_avg, min_value: 20, max_value: 60}"))
    monkeypatch.setenv("REPRISE_WAREHOUSE", str(warehouse.root))
    generate_recording(storage, warehouse, catalog, "vitals", keys=5, events=2_000, seed=1,
                       commits=2)
    defs = build_definitions(str(schemas))
    job = dg.define_asset_job("vitals_only", selection=dg.AssetSelection.assets(
        dg.AssetKey(["recordings", "vitals"]), dg.AssetKey(["replays", "vitals_hr_1m"])))
    result = dg.Definitions.merge(defs, dg.Definitions(jobs=[job])).resolve_job_def(
        "vitals_only").execute_in_process(instance=dg.DagsterInstance.ephemeral(),
                                          raise_on_error=False)
    checks = check_results(result)
    assert checks[("vitals_hr_1m", "matches_reference")].passed
    quality = checks[("vitals_hr_1m", "quality")]
    assert not quality.passed
    failed = [r for r in quality.metadata["results"].value if not r["success"]]
    assert [(r["expectation"], r["column"]) for r in failed] == [
        ("expect_column_values_to_be_between", "hr_avg")]
    assert failed[0]["unexpected_count"] > 0


def test_sensor_requests_one_run_per_new_recording_version(sample_defs, storage, warehouse,
                                                           catalog):
    sensor = sample_defs.resolve_sensor_def("new_recording_versions")
    resources = sample_defs.resources

    def tick(cursor):
        with dg.build_sensor_context(cursor=cursor, resources=resources,
                                     definitions=sample_defs) as ctx:
            return sensor(ctx), ctx

    baseline, _ = tick(None)
    assert not baseline.run_requests and baseline.cursor
    quiet, _ = tick(baseline.cursor)
    assert not quiet.run_requests
    vitals = warehouse.recording("vitals")
    storage.write(storage.read_arrow(vitals).slice(0, 10), vitals, mode="append")
    changed, _ = tick(quiet.cursor)
    (request,) = changed.run_requests
    assert request.run_key == f"vitals@v{storage.version(vitals)}"
    readers = {dg.AssetKey(["replays", q.name]) for q in catalog.queries.values()
               if q.chain[0].input == "vitals"}  # (a pipeline's stages too)
    assert dg.AssetKey(["replays", "vitals_hr_1m"]) in readers
    assert dg.AssetKey(["replays", "vitals_tachy_alert"]) in readers
    assert set(request.asset_selection) == {dg.AssetKey(["recordings", "vitals"]), *readers}
    assert json.loads(changed.cursor)["vitals"] == storage.version(vitals)
    after, _ = tick(changed.cursor)
    assert not after.run_requests


def test_schedule_and_jobs_exist(sample_defs):
    schedule = sample_defs.resolve_schedule_def("nightly_replay")
    assert schedule.cron_schedule == "0 3 * * *" and schedule.job_name == ALL_JOB
    # live as soon as a daemon runs (`make ui`), not stopped until switched on in the UI
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    sensor = sample_defs.resolve_sensor_def("new_recording_versions")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    for job in ("recordings_job", "window_job", "select_job", ALL_JOB):
        assert sample_defs.resolve_job_def(job) is not None


def test_definitions_of_a_catalog_with_an_unsafe_or_missing_name_fail_naming_the_file(tmp_path):
    # (a recording named '..' loaded and then failed inside Dagster as an invalid op name; a
    # catalog directory that does not exist gave definitions without any asset)
    from engine.specs import CatalogError

    catalog = tmp_path / "cat"
    shutil.copytree(ROOT / "schemas", catalog)
    vitals = (catalog / "recordings" / "vitals.yaml").read_text()
    (catalog / "recordings" / "...yaml").write_text(vitals.replace("name: vitals", "name: '..'"))
    with pytest.raises(CatalogError, match=r"\.\.\.yaml: field 'name': '\.\.' is not a valid"):
        build_definitions(str(catalog))
    with pytest.raises(CatalogError, match=r"the catalog directory .*nowhere does not exist"):
        build_definitions(str(tmp_path / "nowhere"))


def test_a_replay_asset_and_its_checks_on_an_s3_warehouse(spark, storage, catalog, s3_warehouse,
                                                          monkeypatch):
    monkeypatch.setenv("REPRISE_WAREHOUSE", s3_warehouse.root)
    generate_recording(storage, s3_warehouse, catalog, "vitals", keys=10, events=6_000, seed=3,
                       commits=3)
    replay = dg.AssetKey(["replays", "vitals_hr_1m"])
    job = dg.define_asset_job("replay_on_s3", selection=dg.AssetSelection.assets(replay))
    defs = dg.Definitions.merge(build_definitions(str(ROOT / "schemas")),
                                dg.Definitions(jobs=[job]))
    result = defs.resolve_job_def("replay_on_s3").execute_in_process(
        instance=dg.DagsterInstance.ephemeral())
    assert result.success
    checks = check_results(result)
    assert ("vitals_hr_1m", "matches_reference") in checks
    assert all(e.passed for e in checks.values()), {
        k: e.metadata for k, e in checks.items() if not e.passed}
    meta = {e.asset_key.path[-1]: e.materialization.metadata
            for e in result.get_asset_materialization_events()}
    assert meta["vitals_hr_1m"]["rows_in"].value == 6_000
    run_id = meta["vitals_hr_1m"]["run_id"].value
    assert (s3_warehouse.run_dir(run_id) / "run.json").exists()

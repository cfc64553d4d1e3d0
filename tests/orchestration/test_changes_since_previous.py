"""A replay asset whose query definition changed since its previous materialisation (same
recording version) carries the diff against the previous run, and its non-blocking check
``changes_since_previous`` warns about it."""

from __future__ import annotations

import dagster as dg
from test_continuation_sensor import REPLAY, vitals_only_catalog

from jobs.diff.run_diff import diff_sides
from jobs.diff.sides import resolve_sides
from jobs.recordings.store import generate_recording
from orchestration.definitions import build_definitions
from orchestration.resources import SparkResource, WarehouseResource


def materialise(schemas, instance: dg.DagsterInstance):
    job = dg.define_asset_job("vitals_only", selection=dg.AssetSelection.assets(
        dg.AssetKey(["recordings", "vitals"]), REPLAY))
    defs = dg.Definitions.merge(build_definitions(str(schemas)), dg.Definitions(jobs=[job]))
    result = defs.resolve_job_def("vitals_only").execute_in_process(instance=instance)
    assert result.success
    (meta,) = [e.materialization.metadata for e in result.get_asset_materialization_events()
               if e.asset_key == REPLAY]
    (check,) = [e for e in result.get_asset_check_evaluations()
                if e.check_name == "changes_since_previous"]
    return {k: v.value for k, v in meta.items()}, check


def test_a_changed_definition_carries_the_diff_and_its_check_warns(spark, storage, catalog,
                                                                   warehouse, monkeypatch,
                                                                   tmp_path):
    monkeypatch.setenv("REPRISE_WAREHOUSE", str(warehouse.root))
    generate_recording(storage, warehouse, catalog, "vitals", keys=5, events=2_000, seed=3,
                       commits=2)
    schemas = vitals_only_catalog(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    first, check = materialise(schemas, instance)
    assert first["changes"].startswith("not compared: no previous")
    assert check.passed

    query = schemas / "queries" / "vitals_hr_1m.yaml"
    query.write_text(query.read_text().replace("size: 1m", "size: 2m"))
    second, check = materialise(schemas, instance)
    assert second["run_id"] != first["run_id"]
    assert second["changes_against_run"] == first["run_id"]
    assert second["changes_equal"] is False and not check.passed
    assert check.severity == dg.AssetCheckSeverity.WARN
    runner = WarehouseResource(root=str(warehouse.root), catalog=str(schemas),
                               backend="delta-rs").replay(SparkResource())
    report = diff_sides(runner, *resolve_sides(runner, first["run_id"], second["run_id"],
                                               lambda line: None)).to_json()
    for table in ("output", "late", "quarantine"):
        for kind in ("only_a", "only_b", "changed"):
            assert second[f"changes_{table}_{kind}"] == report[table][kind]
            assert check.metadata[f"changes_{table}_{kind}"].value == report[table][kind]
    assert second["changes_first_diverging_batch"] == report["first_diverging_batch"]

    third, check = materialise(schemas, instance)  # unchanged: the run is continued
    assert third["run_id"] == second["run_id"] and "unchanged" in third["changes"]
    assert check.passed

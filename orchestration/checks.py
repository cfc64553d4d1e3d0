"""Asset checks per replay: equals the reference (blocking), data quality (GX), reconciliation,
changes since the previous materialisation (reprise diff, non-blocking)."""


import json

import dagster as dg

from engine.specs import QuerySpec
from orchestration.assets import replay_key
from orchestration.resources import SparkResource, WarehouseResource

SHOWN = 5


def latest_run_id(context: dg.AssetCheckExecutionContext, key: dg.AssetKey) -> str:
    """The run id recorded by the asset's latest materialization."""
    event = context.instance.get_latest_materialization_event(key)
    if event is None or "run_id" not in event.asset_materialization.metadata:
        raise dg.Failure(f"{key.to_user_string()} has not been materialized yet")
    return event.asset_materialization.metadata["run_id"].value


def _jsonable(row: dict) -> dict:
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}


def build_checks(query: QuerySpec) -> list[dg.AssetChecksDefinition]:
    """The four checks of one replay asset."""
    key = replay_key(query.name)

    @dg.asset_check(asset=key, name="matches_reference", blocking=True,
                    description="Replay output equals the naive reference over the same input")
    def matches_reference(context: dg.AssetCheckExecutionContext, spark: SparkResource,
                          warehouse: WarehouseResource) -> dg.AssetCheckResult:
        from jobs.runs.validate import validate_run

        replay = warehouse.replay(spark)
        report = validate_run(replay, replay.catalog, latest_run_id(context, key))
        d = report.diff
        mismatches = ([{"kind": "missing", "reference": _jsonable(r)} for r in d.missing]
                      + [{"kind": "extra", "replay": _jsonable(r)} for r in d.extra]
                      + [{"kind": "different", "replay": _jsonable(a), "reference": _jsonable(b)}
                         for a, b in d.different]
                      + [{"kind": "duplicate", "replay": _jsonable(r)} for r in d.duplicates])
        return dg.AssetCheckResult(passed=report.ok, metadata={
            "run_id": report.run_id, "output_rows": report.output_rows,
            "reference_rows": report.reference_rows, "missing": len(d.missing),
            "extra": len(d.extra), "different": len(d.different),
            "duplicates": len(d.duplicates), "late_replay": report.late_replay,
            "late_reference": report.late_reference,
            "late_mismatches": len(report.late_mismatch), "tolerance": report.tolerance,
            **({} if report.chain is None else {
                "pipeline_missing": len(report.chain.missing),
                "pipeline_extra": len(report.chain.extra)}),
            "first_mismatches": dg.MetadataValue.json(
                json.loads(json.dumps(mismatches[:SHOWN], default=str))),
        })

    @dg.asset_check(asset=key, name="quality",
                    description="Great Expectations suite of the query file plus schema/non-null")
    def quality(context: dg.AssetCheckExecutionContext, spark: SparkResource,
                warehouse: WarehouseResource) -> dg.AssetCheckResult:
        from jobs.runs.quality import build_expectations, run_suite
        from jobs.runs.run_context import RunContext

        replay = warehouse.replay(spark)
        run_id = latest_run_id(context, key)
        op = RunContext.of(query, replay.catalog.recordings).operator
        frame = op.final_view(replay.storage.read_arrow(
            replay.warehouse.run_table(run_id, "output")).to_pandas())
        expectations = build_expectations(query.expectations, list(frame.columns),
                                          op.output_keys, query.source)
        suite = run_suite(frame, expectations, name=query.name)
        return dg.AssetCheckResult(passed=suite.success, metadata={
            "run_id": run_id, "evaluated": len(suite.results), "failed": len(suite.failed),
            "results": dg.MetadataValue.json(json.loads(json.dumps(
                [{"expectation": r.expectation, "column": r.column, "success": r.success,
                  "unexpected_count": r.unexpected_count, "observed": r.observed}
                 for r in suite.results], default=str))),
        })

    @dg.asset_check(asset=key, name="manifest_reconciles",
                    description="input = processed + late + quarantined; tables match manifest")
    def manifest_reconciles(context: dg.AssetCheckExecutionContext, spark: SparkResource,
                            warehouse: WarehouseResource) -> dg.AssetCheckResult:
        from dataclasses import asdict

        from jobs.runs.validate import reconcile_run

        run_id = latest_run_id(context, key)
        counts = reconcile_run(warehouse.replay(spark), run_id)
        return dg.AssetCheckResult(passed=counts.ok, metadata={"run_id": run_id,
                                                               **asdict(counts)})

    @dg.asset_check(asset=key, name="changes_since_previous",
                    description="What the latest materialisation's run changes against the "
                    "previous one's when the definition changed on the same recording version "
                    "(reprise diff); warns on a change, never blocks")
    def changes_since_previous(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        event = context.instance.get_latest_materialization_event(key)
        if event is None:
            raise dg.Failure(f"{key.to_user_string()} has not been materialized yet")
        meta = {name: value.value for name, value in
                event.asset_materialization.metadata.items() if name.startswith("changes")}
        return dg.AssetCheckResult(passed=bool(meta.get("changes_equal", True)),
                                   severity=dg.AssetCheckSeverity.WARN, metadata=meta)

    return [matches_reference, quality, manifest_reconciles, changes_since_previous]


def build_standalone_check(query: QuerySpec) -> dg.AssetChecksDefinition:
    """``equals_standalone`` of a replay that can run shared: after a shared materialisation,
    the query replayed on its own (run ``<run id>-standalone``, same input version and batch
    plan) has the same output, late and quarantine rows; a replay that ran alone passes."""
    key = replay_key(query.name)

    @dg.asset_check(asset=key, name="equals_standalone",
                    description="A shared replay's tables equal the query's standalone replay")
    def equals_standalone(context: dg.AssetCheckExecutionContext, spark: SparkResource,
                          warehouse: WarehouseResource) -> dg.AssetCheckResult:
        from jobs.shared.standalone_compare import compare_with_standalone

        event = context.instance.get_latest_materialization_event(key)
        shared = event is not None and event.asset_materialization.metadata.get("shared")
        run_id = latest_run_id(context, key)
        if not (shared and shared.value):
            return dg.AssetCheckResult(passed=True, metadata={
                "run_id": run_id, "note": "the latest materialisation ran alone"})
        differences = compare_with_standalone(warehouse.replay(spark), run_id)
        return dg.AssetCheckResult(passed=not differences, metadata={
            "run_id": run_id, "standalone_run_id": f"{run_id}-standalone",
            "differences": dg.MetadataValue.json(differences)})

    return equals_standalone

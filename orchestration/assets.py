"""Assets built from the catalog: one per recording, one per query; no code per query.

Versions (what Dagster's staleness compares): a recording's data version is its Delta version;
a replay's code version is the fingerprint of its query's definition (the query file and its
operator's version: the hash a run records), and its data version a hash of what determines
its output: that fingerprint, the batch plan and the recording version(s) the run is pinned to.
A materialisation that finds no new recording version keeps the data version, so nothing
downstream turns stale; a changed query definition makes the replay stale until it is
materialised again.
"""

import hashlib
import json

import dagster as dg
import pandas as pd

from engine.specs import QuerySpec, RecordingSpec
from orchestration.resources import SparkResource, WarehouseResource

SPARKS = "▁▂▃▄▅▆▇█"


def recording_key(name: str) -> dg.AssetKey:
    return dg.AssetKey(["recordings", name])


def replay_key(name: str) -> dg.AssetKey:
    return dg.AssetKey(["replays", name])


def sparkline(values: list[float]) -> str:
    """A one-line Unicode chart of ``values`` (scaled to their maximum)."""
    top = max(values, default=0) or 1
    return "".join(SPARKS[min(len(SPARKS) - 1, int(v / top * (len(SPARKS) - 1)))] for v in values)


def manifest_chart(manifest: pd.DataFrame) -> str:
    """Markdown: state size and batch duration across batches."""
    batches = manifest[manifest["kind"] == "batch"]
    rows = batches["state_rows"].tolist()
    size = batches["state_bytes"].tolist()
    secs = batches["duration_s"].tolist()
    return "\n".join([
        "| across batches | chart | min | max |", "|---|---|---|---|",
        f"| state rows | `{sparkline(rows)}` | {min(rows, default=0)} | {max(rows, default=0)} |",
        f"| state bytes | `{sparkline(size)}` | {min(size, default=0)} | {max(size, default=0)} |",
        f"| batch seconds | `{sparkline(secs)}` | {min(secs, default=0):.3f} | "
        f"{max(secs, default=0):.3f} |"])


def segment_metadata(info, segment: dict | None, fresh_reason: str) -> dict:
    """What a materialization did to its run ``info`` (its RunInfo): the segment it added (from
    version, to version, new events), ``none`` when the recording had no new version; a fresh
    replay (no earlier run, or one that cannot be continued) is the run's segment 0, with
    why."""
    if segment is None and fresh_reason:  # the run's first replay: all of it is new
        segment = {"segment": 0, "from_version": None, "to_version": info.input_version,
                   "events": info.total, "batches": info.batches}
    if segment is None:
        return {"segment": "none (no new recording version)"}
    meta = {"segment": int(segment["segment"]),
            "segment_from_version": -1 if segment.get("from_version") is None
            else int(segment["from_version"]),
            "segment_to_version": int(segment["to_version"]),
            "new_events": int(segment["events"]),
            "new_batches": int(segment["batches"])}
    return {**meta, "fresh_because": fresh_reason} if fresh_reason else meta


def build_recording_asset(spec: RecordingSpec) -> dg.AssetsDefinition:
    """``recordings/<name>``: observes the recording's Delta version (written by reprise)."""

    @dg.asset(key=recording_key(spec.name), group_name="recordings", kinds={"delta"},
              description=spec.description or f"Recording {spec.name}")
    def recording(warehouse: WarehouseResource) -> dg.MaterializeResult:
        from jobs.storage.versions import snapshot_summary

        path = warehouse.warehouse().recording(spec.name)
        summary = snapshot_summary(path)
        if summary is None:
            raise dg.Failure(f"recording {spec.name!r} has no Delta table at {path}; write one "
                             f"with `reprise generate {spec.name}` or `reprise record`")
        version, rows, files = summary
        return dg.MaterializeResult(
            metadata={"delta_version": version, "rows": rows, "files": files,
                      "path": dg.MetadataValue.path(path)},
            data_version=dg.DataVersion(str(version)))

    return recording


def replay_metadata(info, manifest: pd.DataFrame) -> dict:
    """What a replay's materialization records of its run (``info``: its RunInfo)."""
    seconds = float(manifest["duration_s"].sum())
    return {
        "run_id": info.run_id,
        "input_version": info.input_version,
        "batches": info.batches,
        "rows_in": int(manifest["rows_in"].sum()),
        "rows_out": int(manifest["rows_out"].sum()),
        "late": int(manifest["late"].sum()),
        "quarantined": int(manifest["quarantined"].sum()),
        "events_per_s": round(info.total / seconds, 1) if seconds else 0.0,
        "peak_state_rows": int(manifest["state_rows"].max()),
        "peak_state_bytes": int(manifest["state_bytes"].max()),
        "output_version": int(manifest["output_version"].iloc[-1]),
        "across_batches": dg.MetadataValue.md(manifest_chart(manifest)),
    }


def code_version(query: QuerySpec, recordings: dict[str, RecordingSpec]) -> str:
    """The replay asset's code version: the fingerprint of ``query``'s definition, as its runs
    record it (a run with another fingerprint is not continued)."""
    from jobs.runs.run_context import RunContext
    from jobs.runs.run_info import fingerprint

    return fingerprint(query, RunContext.of(query, recordings).operator)


def data_version(info) -> dg.DataVersion:
    """The data version of a replay whose run is ``info`` (its RunInfo): a hash of the query's
    fingerprint, the batch plan and the recording versions the run is pinned to, which
    determine its output (a continued run's tables equal a fresh replay's at those versions)."""
    sources = info.sources or {"input": info.input_version}
    text = json.dumps({"fingerprint": info.fingerprint, "plan": info.plan,
                       "sources": sources}, sort_keys=True)
    return dg.DataVersion(hashlib.sha256(text.encode()).hexdigest()[:16])


def previous_run_id(context: dg.AssetExecutionContext, key: dg.AssetKey) -> str | None:
    """The run id of the asset's latest materialisation so far (None: none)."""
    event = context.instance.get_latest_materialization_event(key)
    if event is None or "run_id" not in event.asset_materialization.metadata:
        return None
    return str(event.asset_materialization.metadata["run_id"].value)


def changes_metadata(runner, previous: str | None, run_id: str) -> dict:
    """The diff summary of run ``run_id`` against the previous materialisation's run, when the
    query's definition changed in between on the same recording version (``changes_*``), else
    why there is none (``changes``)."""
    from jobs.diff.compare import KINDS
    from jobs.diff.previous import changes_since

    report, why = changes_since(runner, previous, run_id)
    if report is None:
        return {"changes": f"not compared: {why}"}
    first = report.first_diverging_batch
    meta = {"changes": "compared with the previous run", "changes_against_run": previous,
            "changes_equal": report.equal,
            "changes_first_diverging_batch": -1 if first is None else first}
    for table, diff in report.tables.items():
        for kind in KINDS:
            meta[f"changes_{table}_{kind}"] = getattr(diff.counts, kind)
    return meta


def replay_spec(query: QuerySpec, recordings: dict[str, RecordingSpec]) -> dg.AssetSpec:
    """The asset ``replays/<name>`` of a query: its group is its kind, it reads its recordings
    (a pipeline stage: its upstream query's replay), its code version is its definition's
    fingerprint (:func:`code_version`)."""
    return dg.AssetSpec(
        replay_key(query.name), group_name=query.kind,
        deps=[replay_key(query.upstream.query.name)] if query.upstream is not None
        else [recording_key(r) for r in query.inputs.values()], kinds={"spark", "delta"},
        description=str(query.raw.get("description", f"{query.kind} query {query.name}")),
        code_version=code_version(query, recordings))


def build_replay_asset(query: QuerySpec, recordings: dict[str, RecordingSpec]
                       ) -> dg.AssetsDefinition:
    """``replays/<name>``: the query's run extended to the latest recording version (the
    latest run is continued, an interrupted one finished first; a fresh replay when there is
    none or it cannot be)."""

    @dg.multi_asset(specs=[replay_spec(query, recordings)], name=f"replay_{query.name}")
    def replay(context: dg.AssetExecutionContext, spark: SparkResource,
               warehouse: WarehouseResource) -> dg.MaterializeResult:
        from jobs.runs.continuation import continue_query

        runner = warehouse.replay(spark)
        previous = previous_run_id(context, replay_key(query.name))
        result = continue_query(runner, query.name, log=context.log.info,
                                on_batch=lambda r: context.log.debug(
                                    f"batch {r.batch}: {r.rows_in} in, {r.rows_out} out, "
                                    f"{r.late} late"))
        info, manifest = result.info, result.manifest.to_pandas()
        context.log.info(f"run {info.run_id}: {info.total} events, {info.batches} batches")
        return dg.MaterializeResult(asset_key=replay_key(query.name), metadata={
            **replay_metadata(info, manifest),
            **segment_metadata(info, result.segment, result.fresh_reason),
            **changes_metadata(runner, previous, info.run_id)},
            data_version=data_version(info))

    return replay

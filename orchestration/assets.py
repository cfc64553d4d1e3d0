"""Assets built from the catalog: one per recording, one per query; no code per query."""


import dagster as dg
import pandas as pd

from engine.catalog import Catalog, QuerySpec, RecordingSpec
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


def replay_spec(query: QuerySpec) -> dg.AssetSpec:
    """The asset ``replays/<name>`` of a query: its group is its kind, it reads its recordings."""
    return dg.AssetSpec(
        replay_key(query.name), group_name=query.kind,
        deps=[recording_key(r) for r in query.inputs.values()], kinds={"spark", "delta"},
        description=str(query.raw.get("description", f"{query.kind} query {query.name}")))


def build_replay_asset(query: QuerySpec) -> dg.AssetsDefinition:
    """``replays/<name>``: the query's run extended to the latest recording version (the
    latest run is continued, an interrupted one finished first; a fresh replay when there is
    none or it cannot be)."""

    @dg.multi_asset(specs=[replay_spec(query)], name=f"replay_{query.name}")
    def replay(context: dg.AssetExecutionContext, spark: SparkResource,
               warehouse: WarehouseResource) -> dg.MaterializeResult:
        from jobs.runs.continuation import continue_query

        runner = warehouse.replay(spark)
        result = continue_query(runner, query.name, log=context.log.info,
                                on_batch=lambda r: context.log.debug(
                                    f"batch {r.batch}: {r.rows_in} in, {r.rows_out} out, "
                                    f"{r.late} late"))
        info, manifest = result.info, result.manifest.to_pandas()
        context.log.info(f"run {info.run_id}: {info.total} events, {info.batches} batches")
        return dg.MaterializeResult(asset_key=replay_key(query.name), metadata={
            **replay_metadata(info, manifest),
            **segment_metadata(info, result.segment, result.fresh_reason)})

    return replay


def build_assets(catalog: Catalog) -> list[dg.AssetsDefinition]:
    """Every recording; the replays of the single-input queries of each recording as one
    multi-asset (materialised together they share the scan); each multi-input query alone."""
    from engine.registry import family_of
    from orchestration.shared_assets import build_shared_replays

    assets = [build_recording_asset(spec) for spec in catalog.recordings.values()]
    by_recording: dict[str, list[QuerySpec]] = {}
    for q in catalog.queries.values():
        if family_of(q.kind, q.source).single_input:
            by_recording.setdefault(q.input, []).append(q)
        else:
            assets.append(build_replay_asset(q))
    assets += [build_shared_replays(name, queries)
               for name, queries in sorted(by_recording.items())]
    return assets

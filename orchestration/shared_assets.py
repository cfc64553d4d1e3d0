"""The replays of one recording, or the pipeline stages over one upstream query, as one
subsettable multi-asset: the first materialisation of several of them replays them as one
shared run (``jobs/shared/shared_run.py``: one scan per batch group; stages: the upstream's run
is continued first and its output read once, ``jobs/shared/shared_stages.py``); a query with a
run (complete, or interrupted: finished first) is continued on its own
(``jobs/runs/continuation.py``), as is one materialised alone. The shared plan is
materialisation metadata."""

from collections.abc import Iterator

import dagster as dg

from engine.specs import QuerySpec, RecordingSpec
from orchestration.assets import (
    changes_metadata,
    data_version,
    previous_run_id,
    replay_key,
    replay_metadata,
    replay_spec,
    segment_metadata,
)
from orchestration.resources import SparkResource, WarehouseResource


def plan_metadata(plan) -> dict:
    """The shared plan (``engine.sharing.SharedPlan``) as metadata: hash, clusters (queries,
    W, columns, pane groups), counters."""
    doc = plan.to_json()
    return {"plan_hash": doc["plan_hash"],
            "plan_clusters": dg.MetadataValue.json(doc["clusters"]),
            "plan_pane_groups": sum(len(c["pane_groups"]) for c in doc["clusters"]),
            "plan_counters": dg.MetadataValue.json(doc["counters"])}


def build_shared_replays(source: str, queries: list[QuerySpec],
                         recordings: dict[str, RecordingSpec]) -> dg.AssetsDefinition:
    """``replays/<name>`` for every query of ``queries``: all on the recording ``source``, or
    all pipeline stages over the query ``source`` (``recordings``: the catalog's)."""
    names = {replay_key(q.name): q.name for q in queries}
    stages = queries[0].upstream is not None

    @dg.multi_asset(specs=[replay_spec(q, recordings) for q in queries],
                    name=f"stages_over_{source}" if stages else f"replays_of_{source}",
                    can_subset=True)
    def replays(context: dg.AssetExecutionContext, spark: SparkResource,
                warehouse: WarehouseResource) -> Iterator[dg.MaterializeResult]:
        from jobs.runs.continuation import continue_query, run_to_continue
        from jobs.shared.shared_run import SharedReplay

        selected = [names[k] for k in sorted(context.selected_asset_keys,
                                              key=lambda k: k.to_user_string())]
        runner = warehouse.replay(spark)
        previous = {name: previous_run_id(context, replay_key(name)) for name in selected}
        first = [q for q in selected if run_to_continue(runner, q) is None]
        for name in selected if len(first) < 2 else [q for q in selected if q not in first]:
            result = continue_query(runner, name, log=context.log.info)  # its own segment
            yield dg.MaterializeResult(asset_key=replay_key(name), metadata={
                **replay_metadata(result.info, result.manifest.to_pandas()),
                **segment_metadata(result.info, result.segment, result.fresh_reason),
                **changes_metadata(runner, previous[name], result.info.run_id),
                "shared": False}, data_version=data_version(result.info))
        if len(first) < 2:
            return
        # stages: over the upstream's run continued to the latest version (as one alone reads)
        upstream = continue_query(runner, source, log=context.log.info).info if stages else None
        shared = SharedReplay(runner)  # first replays of several queries: one shared scan
        infos = shared.prepare(first, upstream=upstream)
        plan, alone = shared.plan(infos)
        manifests = shared.run(infos, say=context.log.info, planned=(plan, alone))
        for info in infos:
            metadata = {**replay_metadata(info, manifests[info.run_id].to_pandas()),
                        **segment_metadata(info, None, "no completed run"),
                        **changes_metadata(runner, previous[info.query], info.run_id)}
            metadata["shared"] = plan is not None and info not in alone
            if metadata["shared"]:
                metadata.update(plan_metadata(plan))
            if upstream is not None:  # (1: the stages' runs were made from one read of it)
                metadata.update(upstream_run_id=upstream.run_id,
                                upstream_output_reads=shared.upstream_reads)
            yield dg.MaterializeResult(asset_key=replay_key(info.query), metadata=metadata,
                                       data_version=data_version(info))

    return replays

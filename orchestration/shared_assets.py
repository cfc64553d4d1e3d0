"""The replays of one recording as one subsettable multi-asset: materialising several of them
in one run replays them as one shared run (``jobs/shared_run.py``: one scan per batch group);
materialising one replays it alone. The shared plan is materialisation metadata."""

from collections.abc import Iterator

import dagster as dg

from engine.catalog import QuerySpec

from .assets import replay_key, replay_metadata, replay_spec
from .resources import SparkResource, WarehouseResource


def plan_metadata(plan) -> dict:
    """The shared plan (``engine.sharing.SharedPlan``) as metadata: hash, clusters (queries,
    W, columns, pane groups), counters."""
    doc = plan.to_json()
    return {"plan_hash": doc["plan_hash"],
            "plan_clusters": dg.MetadataValue.json(doc["clusters"]),
            "plan_pane_groups": sum(len(c["pane_groups"]) for c in doc["clusters"]),
            "plan_counters": dg.MetadataValue.json(doc["counters"])}


def build_shared_replays(recording: str, queries: list[QuerySpec]) -> dg.AssetsDefinition:
    """``replays/<name>`` for every query of ``queries`` (all on ``recording``)."""
    names = {replay_key(q.name): q.name for q in queries}

    @dg.multi_asset(specs=[replay_spec(q) for q in queries], name=f"replays_of_{recording}",
                    can_subset=True)
    def replays(context: dg.AssetExecutionContext, spark: SparkResource,
                warehouse: WarehouseResource) -> Iterator[dg.MaterializeResult]:
        from jobs.shared_run import SharedReplay

        selected = [names[k] for k in sorted(context.selected_asset_keys,
                                              key=lambda k: k.to_user_string())]
        shared = SharedReplay(warehouse.replay(spark))
        infos = shared.prepare(selected)
        plan, alone = shared.plan(infos)
        manifests = shared.run(infos, say=context.log.info, planned=(plan, alone))
        for info in infos:
            metadata = replay_metadata(info, manifests[info.run_id].to_pandas())
            metadata["shared"] = plan is not None and info not in alone
            if metadata["shared"]:
                metadata.update(plan_metadata(plan))
            yield dg.MaterializeResult(asset_key=replay_key(info.query), metadata=metadata)

    return replays

"""Every asset of a catalog: its recordings, the shared replays of each recording's
single-input queries and of the pipeline stages over each upstream query, and each
multi-input query's replay."""

from __future__ import annotations

import dagster as dg

from engine.catalog import Catalog
from engine.registry import family_of
from engine.specs import QuerySpec
from orchestration.assets import build_recording_asset, build_replay_asset
from orchestration.shared_assets import build_shared_replays


def build_assets(catalog: Catalog) -> list[dg.AssetsDefinition]:
    """Every recording; the replays of the single-input queries of each recording as one
    multi-asset (materialised together they share the scan), and likewise the pipeline stages
    over each upstream query (materialised together they share its output, read once; each
    depends on its upstream query's replay); a multi-input query, or the only stage over its
    upstream, alone."""
    assets = [build_recording_asset(spec) for spec in catalog.recordings.values()]
    by_recording: dict[str, list[QuerySpec]] = {}
    by_upstream: dict[str, list[QuerySpec]] = {}
    for q in catalog.queries.values():
        if not family_of(q.kind, q.source).single_input:
            assets.append(build_replay_asset(q, catalog.recordings))
        elif q.upstream is None:
            by_recording.setdefault(q.input, []).append(q)
        else:
            by_upstream.setdefault(q.upstream.query.name, []).append(q)
    assets += [build_shared_replays(name, queries, catalog.recordings)
               for name, queries in sorted(by_recording.items())]
    for name, stages in sorted(by_upstream.items()):
        assets.append(build_shared_replays(name, stages, catalog.recordings) if len(stages) > 1
                      else build_replay_asset(stages[0], catalog.recordings))
    return assets

"""Every asset of a catalog: its recordings, the shared replays of each recording's
single-input queries, and each multi-input query's and pipeline stage's replay."""

from __future__ import annotations

import dagster as dg

from engine.catalog import Catalog
from engine.registry import family_of
from engine.specs import QuerySpec
from orchestration.assets import build_recording_asset, build_replay_asset
from orchestration.shared_assets import build_shared_replays


def build_assets(catalog: Catalog) -> list[dg.AssetsDefinition]:
    """Every recording; the replays of the single-input queries of each recording as one
    multi-asset (materialised together they share the scan); each multi-input query and each
    pipeline stage (it depends on its upstream query's replay) alone."""
    assets = [build_recording_asset(spec) for spec in catalog.recordings.values()]
    by_recording: dict[str, list[QuerySpec]] = {}
    for q in catalog.queries.values():
        if family_of(q.kind, q.source).single_input and q.upstream is None:
            by_recording.setdefault(q.input, []).append(q)
        else:
            assets.append(build_replay_asset(q, catalog.recordings))
    assets += [build_shared_replays(name, queries, catalog.recordings)
               for name, queries in sorted(by_recording.items())]
    return assets

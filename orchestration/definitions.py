"""Dagster entry point (loaded by ``workspace.yaml``): everything is built from the catalog.

Loading starts no Spark session; resources start it on first use. The catalog directory is
``REPRISE_CATALOG``, else the one found from the working directory (``jobs.settings.find_catalog``:
its ``reprise.yaml`` or ``schemas/``), else the bundled sample catalog (said on stderr).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import dagster as dg

from engine.catalog import CatalogError, load_catalog
from engine.registry import family_of
from jobs.settings import catalog_notice, load_settings
from orchestration.assets import build_assets
from orchestration.automation import build_jobs, build_sensor, nightly_schedule
from orchestration.checks import build_checks, build_standalone_check
from orchestration.resources import default_resources


def build_definitions(catalog_dir: str | None = None) -> dg.Definitions:
    """Definitions for the catalog at ``catalog_dir`` (default: the settings' catalog)."""
    settings = load_settings()
    if catalog_dir is None and (notice := catalog_notice(os.environ, Path.cwd())):
        print(f"reprise: {notice}", file=sys.stderr)
    catalog_dir = catalog_dir or str(settings.catalog)
    catalog = load_catalog(catalog_dir)
    if catalog.root_problem is not None:
        raise CatalogError(str(catalog.root), "<directory>", "the catalog directory "
                           f"{catalog.root} {catalog.root_problem} (REPRISE_CATALOG)")
    catalog.check()  # a file that fails to load fails the definitions, naming it
    assets = build_assets(catalog)
    replayable = {k.path[-1] for a in assets for k in a.keys if k.path[0] == "replays"}
    checks = [c for q in catalog.queries.values() if q.name in replayable
              for c in build_checks(q)]
    checks += [build_standalone_check(q) for q in catalog.queries.values()
               if q.name in replayable and family_of(q.kind, q.source).single_input]
    groups = {"recordings"} | {catalog.queries[name].kind for name in replayable}
    return dg.Definitions(
        assets=assets, asset_checks=checks, jobs=build_jobs(catalog, groups),
        schedules=[nightly_schedule()], sensors=[build_sensor(catalog, replayable)],
        resources=default_resources(catalog_dir, settings), executor=dg.in_process_executor)


defs = build_definitions()

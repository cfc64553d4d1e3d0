"""The query definition a run was made with (stored in its ``run.json``), not the catalog's now."""

from __future__ import annotations

from engine.catalog import Catalog, parse_query
from engine.registry import operator_for
from engine.specs import QuerySpec
from jobs.runs.run_info import RunInfo, fingerprint


def query_of_run(info: RunInfo, catalog: Catalog) -> tuple[QuerySpec, str]:
    """The run's query, parsed from the definition stored with it, and a note ("" when none)
    saying that the catalog's file has changed since (or is gone). Runs made before the
    definition was stored fall back to the catalog's query."""
    current = catalog.queries.get(info.query)
    if not info.query_spec:
        return catalog.query(info.query), ""
    stored = parse_query(info.query_spec, catalog.recordings,
                         f"run {info.run_id}: stored definition of {info.query}",
                         catalog.queries.get)
    if current is None:
        return stored, (f"query {info.query!r} is no longer in the catalog; validated against "
                        "the definition stored with the run")
    if fingerprint(current, operator_for(current, catalog.recordings)) != info.fingerprint:
        return stored, (f"{current.source} has changed since run {info.run_id} was made; "
                        "validated against the definition stored with the run")
    return stored, ""

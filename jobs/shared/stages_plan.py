"""``reprise plan`` of pipeline stages over one upstream query: the shared plan of the stages
over the upstream's output, as a shared replay of them runs it (:mod:`jobs.shared.shared_stages`:
the upstream's run is replayed or reused first, its output read once, and the stages share one
scan of it per group of batches), and each stage's chain as ``reprise plan STAGE`` shows it.

The plan's statistics are a sample of the output table of the upstream's newest run in the
warehouse (by pinned recording versions, then when it was made); without one the estimates have
no statistics (no rows, default selectivities) and the plan says so.
"""

from __future__ import annotations

from engine.catalog import Catalog
from engine.sharing import SharedPlan, Statistics, plan_queries
from jobs.runs.listing import newest_run
from jobs.runs.pipeline_fusion import chain_plan, chain_plan_text
from jobs.runs.run_info import RunHeader
from jobs.shared.shared_plan import (
    named_once,
    one_input,
    plan_json,
    plan_text,
    shared_plan,
    sharing_views,
)
from jobs.storage.locations import exists
from jobs.warehouse import Warehouse


def latest_output(warehouse: Warehouse, query: str) -> tuple[str, str] | None:
    """(run id, output table path) of the newest run of ``query`` in ``warehouse`` that has an
    output table (:func:`~jobs.runs.listing.newest_run`); None: there is none."""
    def has_output(run_id: str, head: RunHeader) -> bool:
        return head.query == query and exists(f"{warehouse.run_table(run_id, 'output')}/_delta_log")

    run_id = newest_run(warehouse, has_output)
    return None if run_id is None else (run_id, warehouse.run_table(run_id, "output"))


def stages_plan(catalog: Catalog, warehouse: Warehouse, names: list[str]
                ) -> tuple[SharedPlan, dict]:
    """The shared plan of the pipeline stages ``names``, which must all read one upstream
    query's output (else :class:`~jobs.shared.shared_plan.SharingError` says what each
    reads), and its JSON: :func:`~jobs.shared.shared_plan.plan_json` with ``upstream`` (the
    query they read), ``statistics_run`` (the run whose output the estimates sampled, or None)
    and ``chains`` (each stage's :func:`~jobs.runs.pipeline_fusion.chain_plan`)."""
    named_once(names)
    queries = one_input(catalog, names)
    stage = queries[0].upstream
    assert stage is not None  # (they read one input: one query's output)
    upstream = stage.query.name
    found = latest_output(warehouse, upstream)
    if found is not None:
        plan = shared_plan(catalog, warehouse, names, sample=found[1])
    else:
        plan = plan_queries(sharing_views(catalog, names), Statistics(rows=0))
    doc = {**plan_json(catalog, plan, names), "upstream": upstream,
           "statistics_run": None if found is None else found[0],
           "chains": {q.name: chain_plan(q) for q in queries}}
    return plan, doc


def stages_plan_text(plan: SharedPlan, doc: dict) -> list[str]:
    """The lines of ``reprise plan STAGE STAGE...``: what the stages read and share, the shared
    plan (:func:`~jobs.shared.shared_plan.plan_text`), then each stage's chain."""
    upstream, run = doc["upstream"], doc["statistics_run"]
    lines = [f"stages over query {upstream}: {', '.join(doc['chains'])}; replayed together, "
             f"the run of {upstream} is replayed first (or reused), so they run over its "
             "complete run, not fused with it: its output is read once and the stages run as "
             "one shared run over it",
             f"statistics: the output of run {run} of {upstream}" if run is not None else
             f"statistics: none (no run of {upstream} in the warehouse yet): estimates assume "
             "no rows and default selectivities",
             *plan_text(plan, doc["on_its_own"])]
    for chain in doc["chains"].values():
        lines += chain_plan_text(chain)
    return lines

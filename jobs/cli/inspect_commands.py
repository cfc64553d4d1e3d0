"""``reprise validate``, ``plan`` and ``runs``: looking at runs and shared plans."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from jobs.cli.command_context import Context, catalog_of, open_warehouse
from jobs.cli.options import Backend_, Catalog_, Warehouse_
from jobs.cli.output import console, err, print_table
from jobs.settings import load_settings


def validate(
    run_id: Annotated[str, typer.Argument(help="Run id (see `reprise runs`)")],
    show: Annotated[int, typer.Option(help="How many differing rows to print")] = 10,
    warehouse: Warehouse_ = None, catalog: Catalog_ = None, backend: Backend_ = None,
) -> None:
    """Compare a run's output with the naive reference; exit 1 on any difference."""
    from jobs.runs.validate import validate_run

    ctx = Context(warehouse, catalog, backend)
    report = validate_run(ctx.replay(), ctx.catalog, run_id,
                          on_stage=lambda stage: err.print(f"validate: {stage}...",
                                                           highlight=False))
    if report.note:
        err.print(f"note: {report.note}", highlight=False)
    d = report.diff
    table = Table("check", "result", title=f"validate {run_id}")
    table.add_row("output rows (replay / reference)",
                  f"{report.output_rows} / {report.reference_rows}")
    table.add_row("missing rows", str(len(d.missing)))
    table.add_row("extra rows", str(len(d.extra)))
    table.add_row("different rows", str(len(d.different)))
    table.add_row("duplicate rows", str(len(d.duplicates)))
    table.add_row("late events (replay / reference)",
                  f"{report.late_replay} / {report.late_reference}")
    table.add_row("input = processed + late + quarantined",
                  f"{report.input_rows} = {report.processed} + {report.late_replay} + "
                  f"{report.quarantined}: {'yes' if report.reconciles else 'NO'}")
    if report.chain is not None:
        table.add_row("pipeline: composed reference over the recording (missing / extra)",
                      f"{len(report.chain.missing)} / {len(report.chain.extra)}")
    table.add_row("tolerance", report.tolerance)
    print_table(table)
    for label, rows in (("missing", d.missing), ("extra", d.extra), ("duplicate", d.duplicates)):
        for row in rows[:show]:
            console.print(f"{label}: {row}", highlight=False)
    for got, ref in d.different[:show]:
        console.print(f"different: replay {got}\n           reference {ref}", highlight=False)
    if report.late_mismatch:
        console.print("late or quarantined events that differ (arrival seq): "
                      f"{report.late_mismatch[:show]}")
    if report.chain is not None and not report.chain.ok:
        for label, rows in (("composed missing", report.chain.missing),
                            ("composed extra", report.chain.extra)):
            for row in rows[:show]:
                console.print(f"{label}: {row}", highlight=False)
        stage = ("an upstream stage (this one equals its reference over its upstream's run)"
                 if d.ok else "this stage")
        err.print(f"the pipeline differs from its composed reference: the fault is in {stage}",
                  highlight=False)
    if not report.ok:
        err.print("[bold red]validation failed[/]")
        raise typer.Exit(code=1)
    console.print("[bold green]output equals the reference[/]")


def plan(
    queries: Annotated[list[str], typer.Argument(help="Query names on one recording, or "
                                                 "pipeline stages over one upstream query")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON")] = False,
    warehouse: Warehouse_ = None, catalog: Catalog_ = None,
) -> None:
    """Show how queries on one recording share a replay: clusters, panes, residuals, costs
    (a pipeline stage: the stages of its chain; stages over one upstream: how they share its
    output, and each one's chain)."""
    import json

    settings = load_settings()
    cat = catalog_of(settings, catalog)
    if len(queries) == 1 and cat.query(queries[0]).upstream is not None:  # its chain
        from jobs.runs.pipeline_fusion import chain_plan, chain_plan_text

        doc = chain_plan(cat.query(queries[0]))
        lines = chain_plan_text(doc)
    elif any(cat.query(name).upstream is not None for name in queries):
        from jobs.shared.stages_plan import stages_plan, stages_plan_text

        result, doc = stages_plan(cat, open_warehouse(warehouse or settings.warehouse), queries)
        lines = stages_plan_text(result, doc)
    else:
        from jobs.shared.shared_plan import plan_json, plan_text, shared_plan

        result = shared_plan(cat, open_warehouse(warehouse or settings.warehouse), queries)
        doc = plan_json(cat, result, queries)
        lines = plan_text(result, doc["on_its_own"])
    if as_json:
        print(json.dumps(doc, indent=1))
        return
    for line in lines:
        console.print(line, highlight=False, soft_wrap=True)


def runs(warehouse: Warehouse_ = None) -> None:
    """List the runs in the warehouse: query, pinned versions, status, batches, rows, when."""
    from jobs.runs.listing import summarize

    wh = open_warehouse(warehouse or load_settings().warehouse)
    table = Table("run", "query", "versions", "status", "batches", "output rows", "created",
                  "segments", "engine", title=f"runs in {wh.root}")
    for s in (summarize(wh, run_id) for run_id in wh.runs()):
        table.add_row(s.run_id, s.query, s.versions, s.status,
                      f"{s.batches_done}/{s.batches_total}", f"{s.output_rows:,}", s.created,
                      f"{s.segments}" + (f" (last: {s.last_segment})" if s.last_segment else ""),
                      s.engines)
    print_table(table)

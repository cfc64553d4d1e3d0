"""``reprise replay``, ``follow`` and ``gc``: running queries and removing old runs."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

from jobs.cli.command_context import Context
from jobs.cli.options import Backend_, Catalog_, Warehouse_
from jobs.cli.output import console, err, fail, print_manifest_summary
from jobs.settings import ENGINES


def replay(
    queries: Annotated[list[str], typer.Argument(
        help="Query name (schemas/queries/NAME.yaml); several on one recording share one run",
        metavar="QUERY...")],
    plan: Annotated[str | None, typer.Option(
        help="Batch plan: commit | rows:N | time:1h | cuts:S1,S2,... (default: the query's)")]
        = None,
    run_id: Annotated[str | None, typer.Option(
        help="Run id; an existing run is resumed from its last committed batch")] = None,
    version: Annotated[int | None, typer.Option(help="Recording version (default latest)")]
        = None,
    cont: Annotated[bool, typer.Option(
        "--continue", help="Extend the query's latest run (or --run-id) to the recording's latest "
        "version; an interrupted one is finished first")] = False,
    no_share: Annotated[bool, typer.Option(
        "--no-share", help="Replay several queries one after another, not as one shared run")]
        = False,
    engine: Annotated[str | None, typer.Option(
        help="Where the bucket tasks run: auto (by the run's estimated cost) | spark | driver "
        "(env REPRISE_ENGINE, default auto)")] = None,
    warehouse: Warehouse_ = None, catalog: Catalog_ = None, backend: Backend_ = None,
) -> None:
    """Replay queries over their recording, batch by batch; resumes an interrupted run."""
    from engine.batch_plans import batch_count_warning
    from jobs.cli.progress import ReplayProgress
    from jobs.runs.listing import resume_note

    if cont and version is not None:
        fail("--continue extends a run to the latest version; it takes no --version")
    if engine is not None and engine not in ENGINES:
        fail(f"--engine {engine!r}: expected one of {', '.join(ENGINES)}")
    ctx = Context(warehouse, catalog, backend)
    if engine is not None:
        ctx.settings = replace(ctx.settings, engine=engine)
    if len(queries) > 1:
        from jobs.shared.shared_plan import one_input
        from jobs.shared.shared_run import replay_queries

        if run_id is not None:
            fail("--run-id names the run of one query; replay several queries without it")
        if cont:
            fail("--continue extends the run of one query; continue queries one at a time")
        if not no_share:
            one_input(ctx.catalog, queries)  # before Spark starts
        for info, manifest in replay_queries(ctx.replay(), queries, plan, version, not no_share,
                                             lambda line: console.print(line, highlight=False)):
            print_manifest_summary(info.run_id, manifest.to_pandas())
        return
    query, runner = queries[0], ctx.replay()
    if cont:
        _continue(runner, query, plan, run_id)
        return
    chain = ctx.catalog.query(query).chain
    if len(chain) > 1:  # a pipeline stage: the upstream runs first (reused when complete)
        console.print(f"pipeline {' -> '.join(q.name for q in chain)}: replaying the upstream "
                      "stages first (a completed run is reused)", highlight=False)
    info = runner.prepare(query, plan=plan, run_id=run_id, version=version)
    done = runner.manifest(info.run_id).num_rows
    if warning := batch_count_warning(info.batches, info.plan):
        err.print(f"warning: {warning}", highlight=False)
    if info.exchange == "direct" and info.buckets > 1 and (
            info.input_path == runner.warehouse.recording(info.recording)):
        from jobs.recordings.layout import layout_note

        if note := layout_note(info.recording, info.files, runner.context(query).operator.key):
            err.print(f"note: {note}", highlight=False)
    console.print(f"run [bold]{info.run_id}[/]: {info.recording} v{info.input_version}, "
                  f"{info.total} events, plan {info.plan} -> {info.batches} batches"
                  + resume_note(done, info.batches + 1))
    with ReplayProgress(console, ctx.settings, info.batches + 1, done) as progress:
        runner.on_commit = progress.committed
        manifest = runner.run(info, on_batch=progress.done)
    print_manifest_summary(info.run_id, manifest.to_pandas())


def _continue(runner, query: str, plan: str | None, run_id: str | None) -> None:
    """``replay --continue``: a line about the segment, then the run's totals."""
    from jobs.runs.continuation import continue_query
    from jobs.runs.run_segments import describe

    result = continue_query(runner, query, plan=plan, run_id=run_id,
                            log=lambda line: console.print(line, highlight=False))
    if result.segment is None and not result.fresh_reason and not result.resumed:
        console.print(f"{result.info.run_id}: no new recording version (at "
                      f"v{result.info.input_version}); nothing to do")
    elif result.segment is not None:
        console.print(f"{result.info.run_id}: {describe(result.segment)}", highlight=False)
    print_manifest_summary(result.info.run_id, result.manifest.to_pandas())


def follow(
    query: Annotated[str, typer.Argument(help="Query name (schemas/queries/NAME.yaml)")],
    every: Annotated[str, typer.Option(help="How often to look for new versions")] = "5s",
    plan: Annotated[str | None, typer.Option(help="Batch plan (default: the query's)")] = None,
    max_segments: Annotated[int | None, typer.Option(
        help="Stop after this many segments")] = None,
    for_: Annotated[str | None, typer.Option("--for", help="Stop after this long, e.g. 10m")]
        = None,
    warehouse: Warehouse_ = None, catalog: Catalog_ = None, backend: Backend_ = None,
) -> None:
    """Keep continuing the query's run as the recording gains versions (Ctrl-C stops)."""
    from engine.specs import CatalogError, parse_duration_us
    from jobs.runs.follow import follow as follow_query

    try:
        every_s = parse_duration_us(every, source="--every", fieldname="every") / 1e6
        duration_s = (None if for_ is None else
                      parse_duration_us(for_, source="--for", fieldname="for") / 1e6)
    except CatalogError as exc:
        fail(str(exc))
    if every_s <= 0:
        fail(f"--every {every!r}: give a positive interval, e.g. 5s")
    if max_segments is not None and max_segments < 0:
        fail(f"--max-segments {max_segments}: give 0 or more segments")
    ctx = Context(warehouse, catalog, backend)
    report = follow_query(ctx.replay(), query, every_s=every_s, plan=plan,
                          max_segments=max_segments, duration_s=duration_s,
                          log=lambda line: console.print(line, highlight=False))
    console.print(f"{report.run_id}: {report.segments} segments; stopped ({report.stopped_by}); "
                  f"resume or go on with `reprise follow {query}`", highlight=False)


def gc(
    keep: Annotated[int, typer.Option(help="Completed runs kept per query")] = 1,
    warehouse: Warehouse_ = None, catalog: Catalog_ = None, backend: Backend_ = None,
) -> None:
    """Remove superseded runs and vacuum the old table versions of the kept ones."""
    from jobs.runs.gc import collect

    if keep < 1:
        fail("--keep: keep at least 1 completed run per query")
    ctx = Context(warehouse, catalog, backend)
    report = collect(ctx.replay(), keep=keep)
    for run_id in report.removed:
        console.print(f"removed {run_id}", highlight=False)
    for run_id in report.kept:
        console.print(f"kept {run_id}: vacuumed {report.vacuumed[run_id]} files",
                      highlight=False)

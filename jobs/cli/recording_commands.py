"""``reprise generate``, ``reprise record`` and ``reprise optimize``: writing recordings."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from jobs.cli.command_context import Context
from jobs.cli.options import Backend_, Catalog_, Warehouse_
from jobs.cli.output import console, fail, print_table
from jobs.cli.progress import bar


def generate(
    kind: Annotated[str, typer.Argument(help="vitals | ads | ticks")],
    keys: Annotated[int, typer.Option(help="Number of keys (patients, ads, symbols)")] = 100,
    events: Annotated[int, typer.Option(help="Number of events")] = 100_000,
    seed: Annotated[int, typer.Option(help="Random seed")] = 1,
    commits: Annotated[int, typer.Option(help="Number of Delta commits")] = 10,
    replace: Annotated[bool, typer.Option(help="Overwrite an existing recording")] = False,
    warehouse: Warehouse_ = None, catalog: Catalog_ = None, backend: Backend_ = None,
) -> None:
    """Write a deterministic synthetic recording as several Delta commits."""
    from jobs.recordings.generators import GENERATORS
    from jobs.recordings.store import generate_recording

    if kind not in GENERATORS:
        fail(f"unknown generator {kind!r}; expected one of {', '.join(sorted(GENERATORS))}")
    ctx = Context(warehouse, catalog, backend)
    with bar(console, ctx.settings) as progress:
        task = progress.add_task(f"generate {kind}", total=commits)
        versions = generate_recording(
            ctx.storage, ctx.warehouse, ctx.catalog, kind, keys=keys, events=events,
            seed=seed, commits=commits, replace=replace,
            on_commit=lambda i: progress.update(task, completed=i + 1))
    for name, version in versions.items():
        console.print(f"{name}: version {version} at {ctx.warehouse.recording(name)}")


def record(
    name: Annotated[str, typer.Argument(help="Recording name (schemas/recordings/NAME.yaml)")],
    files: Annotated[list[Path], typer.Argument(help="CSV, JSONL or Parquet files")],
    again: Annotated[bool, typer.Option(
        "--again", help="Record files even if the recording already holds their content")]
        = False,
    warehouse: Warehouse_ = None, catalog: Catalog_ = None, backend: Backend_ = None,
) -> None:
    """Append files to a recording in one commit; rows that do not fit are quarantined."""
    from jobs.recordings.store import FileReport, record_files
    from jobs.storage import open_driver_storage

    ctx = Context(warehouse, catalog, backend)
    spec = ctx.catalog.recording(name)
    progress = bar(console, ctx.settings)
    task = progress.add_task(f"record {name}", total=len(files))

    def read(r: FileReport) -> None:
        progress.advance(task)
        if progress.disable:  # no bar: a line per file
            console.print(f"{r.source}: " + ("skipped" if r.skipped else
                          f"{r.rows} rows, {r.recorded} fit, {r.quarantined} quarantined"),
                          highlight=False, soft_wrap=True)

    with nullcontext() if progress.disable else progress:
        reports = record_files(open_driver_storage(backend, ctx.settings), ctx.warehouse, spec,
                               files, again=again, on_file=read)
    table = Table("file", "rows", "recorded", "quarantined", "version", title=f"record {name}")
    for r in reports:
        counts = ("-", "-", "-") if r.skipped else (str(r.rows), str(r.recorded),
                                                    str(r.quarantined))
        table.add_row(r.source, *counts, "-" if r.version is None else str(r.version))
    print_table(table)
    for r in reports:
        if r.skipped:
            console.print(f"skipped {r.source}: {r.skipped} (sha256 {r.sha256[:12]}…); "
                          "--again records it again", highlight=False, soft_wrap=True)
        elif r.rows and not r.recorded:
            console.print(f"warning: no row of {r.source} fits recording {name!r} (see the "
                          "reasons in its quarantine)", highlight=False, soft_wrap=True)
    bad = sum(r.quarantined for r in reports)
    if bad:
        console.print(f"{bad} rows quarantined with reasons in {ctx.warehouse.quarantine(name)}")


def optimize(
    name: Annotated[str, typer.Argument(help="Recording name (schemas/recordings/NAME.yaml)")],
    warehouse: Warehouse_ = None, catalog: Catalog_ = None, backend: Backend_ = None,
) -> None:
    """Rewrite a recording into the key-hash layout (one commit; no row or arrival order
    changes), so that each bucket's task reads only its keys."""
    from jobs.recordings.optimize import optimize_recording
    from jobs.storage import open_driver_storage

    ctx = Context(warehouse, catalog, backend)
    spec = ctx.catalog.recording(name)
    done = optimize_recording(open_driver_storage(backend, ctx.settings), ctx.warehouse, spec)
    if done.version is None:
        console.print(f"{name}: its {done.kept} files are in the key-hash layout already; "
                      "nothing to do", highlight=False)
        return
    console.print(f"{name}: version {done.version} rewrote {done.rewritten} files into the "
                  f"key-hash layout ({done.kept} were in it)", highlight=False)

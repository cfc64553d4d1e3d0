"""``reprise diff``: what a change to a query changes in its output (registered on the
``reprise`` app by :mod:`jobs.cli.app`). Unlike the other commands it exits as diff(1) does:
0 equal, 1 different, 2 on any error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.table import Table

from engine.errors import RepriseError
from jobs.cli.command_context import Context
from jobs.cli.options import Backend_, Catalog_, Warehouse_
from jobs.cli.output import console, err, print_table
from jobs.cli.output import fail as fail_with
from jobs.diff.report import DiffReport, plain
from jobs.diff.tables import TABLES

#: The exit status of an error (1 means "different").
ERROR = 2


def fail(message: str) -> NoReturn:
    """``error: message`` on one line, exit :data:`ERROR`."""
    fail_with(message, code=ERROR)


def diff(
    a: Annotated[str, typer.Argument(help="Run id or query name (with --base: the query)")],
    b: Annotated[str | None, typer.Argument(
        help="Run id or query name; a query name means its latest complete run at A's "
             "recording version and plan, replayed when there is none")] = None,
    base: Annotated[str | None, typer.Option(
        "--base", help="Compare query A's definition at this git revision of the catalog "
        "(e.g. HEAD, main~1) with its current one")] = None,
    limit: Annotated[int, typer.Option(help="How many differences to show")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON")] = False,
    output: Annotated[Path | None, typer.Option(
        "--output", help="Write every difference as Delta tables under this new directory")]
        = None,
    warehouse: Warehouse_ = None, catalog: Catalog_ = None, backend: Backend_ = None,
) -> None:
    """Compare two runs of one recording version row by row; exit 0 equal, 1 different, 2 on
    an error."""
    from jobs.diff.base_revision import resolve_base
    from jobs.diff.run_diff import diff_sides
    from jobs.diff.sides import resolve_sides
    from jobs.diff.written import check_directory

    if (b is None) == (base is None):
        fail("reprise diff: give two runs or queries (A B), or one query and --base REV")
    if limit < 0:
        fail(f"--limit {limit}: give 0 or more differences")
    if output is not None and not str(output).strip():
        fail("--output: empty path")

    def log(line: str) -> None:
        err.print(line, highlight=False, soft_wrap=True)

    try:
        if output is not None:
            check_directory(output)  # before anything is replayed
        runner = Context(warehouse, catalog, backend).replay()
        sides = (resolve_base(runner, a, base, log) if base is not None
                 else resolve_sides(runner, a, b or "", log))
        report = diff_sides(runner, *sides, limit=limit, output=output,
                            on_stage=lambda stage: log(f"diff: {stage}..."))
    except (RepriseError, OSError) as exc:
        fail(str(exc))
    if as_json:
        print(json.dumps(report.to_json(), indent=1))
    else:
        show(report, limit)
    raise typer.Exit(code=0 if report.equal else 1)


def show(report: DiffReport, limit: int) -> None:
    """The report as text: the sides, the counts, the first differences."""
    for name, side in (("A", report.a), ("B", report.b)):
        console.print(f"{name}: {side.given} = run {side.info.run_id} ({side.reads}, plan "
                      f"{side.info.plan})", highlight=False, soft_wrap=True)
    counts = Table("table", "only in A", "only in B", "changed", "equal", "moved",
                   title="rows compared")
    for name in TABLES:
        c = report.tables[name].counts
        counts.add_row(name, *map(str, (c.only_a, c.only_b, c.changed, c.equal, c.moved)))
    print_table(counts)
    first = report.first_diverging_batch
    console.print("outputs are equal" if report.equal else
                  f"first diverging batch: {'-' if first is None else first}", highlight=False)
    for name in TABLES:
        layout, c = report.tables[name].layout, report.tables[name].counts
        for label, only in (("A", layout.only_in_a), ("B", layout.only_in_b)):
            if only:
                console.print(f"{name}: columns only in {label} (not compared): "
                              f"{', '.join(only)}", highlight=False, soft_wrap=True)
        if c.changed_columns:
            console.print(f"{name}: changed rows per column: " + ", ".join(
                f"{col} {n}" for col, n in sorted(c.changed_columns.items())),
                highlight=False, soft_wrap=True)
    for note in report.notes:
        console.print(f"note: {note}", highlight=False, soft_wrap=True)
    if not report.equal and limit:
        print_table(differences_table(report, limit))
    for path in report.written:
        console.print(f"differences written to {path}", highlight=False, soft_wrap=True)


def differences_table(report: DiffReport, limit: int) -> Table:
    """The first ``limit`` differences of each table, both sides' values side by side."""
    table = Table("table", "difference", "row", "batch A", "batch B", "A", "B",
                  title=f"first differences (at most {limit} per table)")
    for name in TABLES:
        diff = report.tables[name]
        keys = diff.layout.keys if diff.layout.order else list(diff.layout.identity)
        for row in diff.shown.astype(object).to_dict("records"):
            kind = row["difference"]
            columns = (row["changed_columns"].split(",") if kind == "changed"
                       else list(diff.layout.values))
            side = {s: "" if kind == ("only_b" if s == "a" else "only_a") else ", ".join(
                f"{c}={plain(row[f'{c}_{s}'])}" for c in columns) for s in "ab"}
            table.add_row(name, kind, ", ".join(f"{k}={plain(row[k])}" for k in keys),
                          *(str(plain(row[f"batch_{s}"])) for s in "ab"), side["a"], side["b"])
    return table

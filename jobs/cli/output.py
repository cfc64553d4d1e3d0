"""What every ``reprise`` command prints: the consoles, one-line errors, whole tables and a
run's totals."""

from __future__ import annotations

import re
import sys
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer._click.exceptions import UsageError  # (typer's own click)

#: Without a terminal, tables are 120 wide (logs: no cramped tables) and a line of text is never
#: broken (scripts read the lines); a run id is never cut in a table.
console = Console(width=None if sys.stdout.isatty() else 120, soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: message`` on one line and exit with ``code``."""
    line = re.sub(r"\s*\n\s*", " ", message.strip())
    err.print(f"[bold red]error:[/] {escape(line)}", highlight=False)
    raise typer.Exit(code=code)


def missing_file(exc: Exception) -> str | None:
    """The path of a missing file that ``exc`` reports, read in this process (pyarrow), by
    Spark or by a Spark worker (None for any other exception)."""
    if isinstance(exc, FileNotFoundError):
        return str(exc.filename or exc)
    if type(exc).__name__ in ("AnalysisException", "PythonException", "Py4JJavaError"):
        found = re.search(r"(?:PATH_NOT_FOUND\] Path does not exist: |FileNotFoundError: )"
                          r"(\S+?)\.?(?: SQLSTATE|\s|$)", str(exc))
        return found.group(1) if found else None
    return None


def usage(exc: UsageError) -> NoReturn:
    """Print a usage error as one ``error:`` line naming the command, and exit 2."""
    command = exc.ctx.command_path if exc.ctx else "reprise"
    fail(f"{command}: {exc.format_message()} (see {command} --help)", code=2)


def print_table(table: Table) -> None:
    """Print ``table`` whole: on a terminal a long cell (a run id, a file name) wraps instead of
    being cut; without one the table is as wide as its longest row, so each row is one line that
    scripts and logs can read."""
    for column in table.columns:
        column.overflow = "fold"
    if console.is_terminal:
        console.print(table)
    else:
        title, table.title = table.title, None  # (rich wraps a title to the table's width)
        wide = console.measure(table, options=console.options.update_width(100_000)).maximum
        out = Console(width=max(console.width, wide))
        if title:
            out.print(title, soft_wrap=True, highlight=False)
        out.print(table)



def print_manifest_summary(run_id: str, m) -> None:
    """One-line totals of a run's manifest."""
    seconds = float(m["duration_s"].sum())
    rows_in = int(m["rows_in"].sum())
    console.print(
        f"{run_id}: {rows_in} events in {len(m) - 1} batches, {int(m['rows_out'].sum())} output "
        f"rows, {int(m['late'].sum())} late, {int(m['quarantined'].sum())} quarantined, "
        f"peak state {int(m['state_rows'].max())} rows / {int(m['state_bytes'].max())} bytes, "
        f"{rows_in / seconds if seconds else 0:,.0f} events/s")

"""The ``reprise`` command line."""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer._click.exceptions import NoArgsIsHelpError, UsageError  # (typer's own click)
from typer.core import TyperGroup

from engine.catalog import Catalog, load_catalog
from engine.errors import RepriseError
from jobs.cli.init_project import init
from jobs.cli.process_exit import exit_now
from jobs.cli.progress import bar
from jobs.settings import Settings, catalog_notice, load_settings


class _Commands(TyperGroup):
    """The commands, each printing a :class:`RepriseError` as one ``error:`` line (exit 1) and
    a usage error (an unknown command or option, a missing or malformed argument) as one
    ``error:`` line (exit 2); any other exception is a bug and keeps its traceback."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except NoArgsIsHelpError:
            raise
        except UsageError as exc:
            _usage(exc)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except RepriseError as exc:
            _fail(str(exc))
        except NoArgsIsHelpError:
            raise
        except UsageError as exc:
            _usage(exc)
        except Exception as exc:  # a data file gone from under a table (not an input error)
            missing = _missing_file(exc)
            if missing is None:
                raise
            _fail(f"a file of a Delta table is missing: {missing} (was the table changed or "
                  "vacuumed outside reprise?)")


app = typer.Typer(help="Replay recorded event streams through verified streaming queries.",
                  no_args_is_help=True, pretty_exceptions_enable=False, cls=_Commands)
#: Without a terminal, tables are 120 wide (logs: no cramped tables) and a line of text is never
#: broken (scripts read the lines); a run id is never cut in a table.
console = Console(width=None if sys.stdout.isatty() else 120, soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)
app.command()(init)  # reprise init: jobs/cli/init_project.py

# Help texts are rich markup: "[env ...]" would be taken for a tag and vanish, hence "(env ...)".


def _directory(text: str) -> Path:
    """A directory option's path; an empty one is refused (it would mean the current
    directory)."""
    if not text.strip():
        raise typer.BadParameter("empty path")
    return Path(text)


Warehouse_ = Annotated[Path | None, typer.Option(
    "--warehouse", parser=_directory,
    help="Warehouse directory (env REPRISE_WAREHOUSE, default ./warehouse)")]
Catalog_ = Annotated[Path | None, typer.Option(
    "--catalog", parser=_directory,
    help="Catalog directory (env REPRISE_CATALOG, default the project's schemas/)")]
Backend_ = Annotated[str | None, typer.Option(
    "--backend", help="Delta backend: auto | delta-rs | delta-spark (env REPRISE_DELTA_BACKEND, "
    "default auto)")]


@app.callback()
def main(verbose: Annotated[bool, typer.Option(
        "--verbose", help="Show the JVM's own log (Spark warnings and notices) on stderr "
        "(env REPRISE_VERBOSE=1)")] = False) -> None:
    """Options for every command."""
    if verbose:
        os.environ["REPRISE_VERBOSE"] = "1"


def _fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: message`` on one line and exit with ``code``."""
    line = re.sub(r"\s*\n\s*", " ", message.strip())
    err.print(f"[bold red]error:[/] {escape(line)}", highlight=False)
    raise typer.Exit(code=code)


def _missing_file(exc: Exception) -> str | None:
    """The path of a missing file that ``exc`` reports, read in this process (pyarrow), by
    Spark or by a Spark worker (None for any other exception)."""
    if isinstance(exc, FileNotFoundError):
        return str(exc.filename or exc)
    if type(exc).__name__ in ("AnalysisException", "PythonException", "Py4JJavaError"):
        found = re.search(r"(?:PATH_NOT_FOUND\] Path does not exist: |FileNotFoundError: )"
                          r"(\S+?)\.?(?: SQLSTATE|\s|$)", str(exc))
        return found.group(1) if found else None
    return None


def _usage(exc: UsageError) -> NoReturn:
    """Print a usage error as one ``error:`` line naming the command, and exit 2."""
    command = exc.ctx.command_path if exc.ctx else "reprise"
    _fail(f"{command}: {exc.format_message()} (see {command} --help)", code=2)


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


def _catalog(settings: Settings, catalog: Path | None) -> Catalog:
    """The catalog of ``--catalog``, else of the settings (``REPRISE_CATALOG``, else the current
    directory's); a line on stderr when it is the bundled sample catalog."""
    if catalog is None and (notice := catalog_notice(os.environ, Path.cwd())):
        err.print(f"note: {notice}", highlight=False, soft_wrap=True)
    return load_catalog(catalog or settings.catalog)


@contextmanager
def _starting_spark() -> Iterator[None]:
    """Say that Spark is starting; once it has, Ctrl-C ends the command with one line (PySpark's
    own handler would cancel the jobs from inside a gateway call and end in a traceback)."""
    with console.status("starting Spark..."):
        yield
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _interrupted)


def _interrupted(signum: int, frame: object) -> None:
    """Ctrl-C while Spark runs: end now (every write is resumable or all-or-nothing; the Spark
    JVM exits when its gateway closes)."""
    err.print("[bold red]error:[/] interrupted; run the same command again to resume a replay "
              "after its last committed batch", highlight=False)
    exit_now(130)


class Context:
    """Settings, warehouse, catalog and a lazily built Spark session and storage for one
    command."""

    def __init__(self, warehouse: Path | None, catalog: Path | None, backend: str | None):
        from jobs.warehouse import Warehouse

        settings = load_settings()  # (--backend delta-spark: the session loads the Delta jars)
        self.settings = replace(settings, delta_backend=backend) if backend else settings
        self.warehouse = Warehouse.at(warehouse or self.settings.warehouse)
        self.catalog = _catalog(self.settings, catalog)
        self._backend = backend
        self._storage = None

    @property
    def storage(self):
        if self._storage is None:
            from jobs.runtime.spark_session import get_spark
            from jobs.storage import open_storage

            with _starting_spark():
                self._storage = open_storage(get_spark(settings=self.settings), self._backend,
                                             self.settings)
        return self._storage

    def replay(self):
        """The replay runner; with the delta-rs backend Spark starts only when the run needs it
        (a small run on the direct exchange runs in this process)."""
        from jobs.runs.replay import Replay
        from jobs.runtime.lazy_session import LazySpark
        from jobs.storage import open_driver_storage
        from jobs.storage.delta_rs import DeltaRsStorage

        if self._storage is None and isinstance(
                open_driver_storage(self._backend, self.settings), DeltaRsStorage):
            spark = LazySpark(self.settings, _starting_spark)
            self._storage = DeltaRsStorage(spark)  # type: ignore[arg-type]  # started on use
        return Replay(self.storage.spark, self.storage, self.warehouse, self.catalog,
                      settings=self.settings)


@app.command()
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
        _fail(f"unknown generator {kind!r}; expected one of {', '.join(sorted(GENERATORS))}")
    ctx = Context(warehouse, catalog, backend)
    with bar(console, ctx.settings) as progress:
        task = progress.add_task(f"generate {kind}", total=commits)
        versions = generate_recording(
            ctx.storage, ctx.warehouse, ctx.catalog, kind, keys=keys, events=events,
            seed=seed, commits=commits, replace=replace,
            on_commit=lambda i: progress.update(task, completed=i + 1))
    for name, version in versions.items():
        console.print(f"{name}: version {version} at {ctx.warehouse.recording(name)}")


@app.command()
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


@app.command()
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
        "--continue", help="Extend the query's latest completed run (or --run-id) to the "
        "recording's latest version")] = False,
    no_share: Annotated[bool, typer.Option(
        "--no-share", help="Replay several queries one after another, not as one shared run")]
        = False,
    warehouse: Warehouse_ = None, catalog: Catalog_ = None, backend: Backend_ = None,
) -> None:
    """Replay queries over their recording, batch by batch; resumes an interrupted run."""
    from jobs.cli.progress import ReplayProgress
    from jobs.runs.batch_plans import batch_count_warning
    from jobs.runs.listing import resume_note

    if cont and version is not None:
        _fail("--continue extends a run to the latest version; it takes no --version")
    ctx = Context(warehouse, catalog, backend)
    if len(queries) > 1:
        from jobs.shared.shared_plan import one_recording
        from jobs.shared.shared_run import replay_queries

        if run_id is not None:
            _fail("--run-id names the run of one query; replay several queries without it")
        if cont:
            _fail("--continue extends the run of one query; continue queries one at a time")
        if not no_share:
            one_recording(ctx.catalog, queries)  # before Spark starts
        for info, manifest in replay_queries(ctx.replay(), queries, plan, version, not no_share,
                                             lambda line: console.print(line, highlight=False)):
            print_manifest_summary(info.run_id, manifest.to_pandas())
        return
    query, runner = queries[0], ctx.replay()
    if cont:
        _continue(runner, query, plan, run_id)
        return
    info = runner.prepare(query, plan=plan, run_id=run_id, version=version)
    done = runner.manifest(info.run_id).num_rows
    if warning := batch_count_warning(info.batches, info.plan):
        err.print(f"warning: {warning}", highlight=False)
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
    if result.segment is None and not result.fresh_reason:
        console.print(f"{result.info.run_id}: no new recording version (at "
                      f"v{result.info.input_version}); nothing to do")
    elif result.segment is not None:
        console.print(f"{result.info.run_id}: {describe(result.segment)}", highlight=False)
    print_manifest_summary(result.info.run_id, result.manifest.to_pandas())


@app.command()
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
    from engine.catalog import CatalogError, parse_duration_us
    from jobs.runs.follow import follow as follow_query

    try:
        every_s = parse_duration_us(every, source="--every", fieldname="every") / 1e6
        duration_s = (None if for_ is None else
                      parse_duration_us(for_, source="--for", fieldname="for") / 1e6)
    except CatalogError as exc:
        _fail(str(exc))
    if every_s <= 0:
        _fail(f"--every {every!r}: give a positive interval, e.g. 5s")
    if max_segments is not None and max_segments < 0:
        _fail(f"--max-segments {max_segments}: give 0 or more segments")
    ctx = Context(warehouse, catalog, backend)
    report = follow_query(ctx.replay(), query, every_s=every_s, plan=plan,
                          max_segments=max_segments, duration_s=duration_s,
                          log=lambda line: console.print(line, highlight=False))
    console.print(f"{report.run_id}: {report.segments} segments; stopped ({report.stopped_by}); "
                  f"resume or go on with `reprise follow {query}`", highlight=False)


@app.command()
def gc(
    keep: Annotated[int, typer.Option(help="Completed runs kept per query")] = 1,
    warehouse: Warehouse_ = None, catalog: Catalog_ = None, backend: Backend_ = None,
) -> None:
    """Remove superseded runs and vacuum the old table versions of the kept ones."""
    from jobs.runs.gc import collect

    if keep < 1:
        _fail("--keep: keep at least 1 completed run per query")
    ctx = Context(warehouse, catalog, backend)
    report = collect(ctx.replay(), keep=keep)
    for run_id in report.removed:
        console.print(f"removed {run_id}", highlight=False)
    for run_id in report.kept:
        console.print(f"kept {run_id}: vacuumed {report.vacuumed[run_id]} files",
                      highlight=False)


def print_manifest_summary(run_id: str, m) -> None:
    """One-line totals of a run's manifest."""
    seconds = float(m["duration_s"].sum())
    rows_in = int(m["rows_in"].sum())
    console.print(
        f"{run_id}: {rows_in} events in {len(m) - 1} batches, {int(m['rows_out'].sum())} output "
        f"rows, {int(m['late'].sum())} late, {int(m['quarantined'].sum())} quarantined, "
        f"peak state {int(m['state_rows'].max())} rows / {int(m['state_bytes'].max())} bytes, "
        f"{rows_in / seconds if seconds else 0:,.0f} events/s")


@app.command()
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
    if not report.ok:
        err.print("[bold red]validation failed[/]")
        raise typer.Exit(code=1)
    console.print("[bold green]output equals the reference[/]")


@app.command()
def plan(
    queries: Annotated[list[str], typer.Argument(help="Query names on one recording")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON")] = False,
    warehouse: Warehouse_ = None, catalog: Catalog_ = None,
) -> None:
    """Show how queries on one recording share a replay: clusters, panes, residuals, costs."""
    import json

    from jobs.shared.shared_plan import plan_json, plan_text, shared_plan
    from jobs.warehouse import Warehouse

    settings = load_settings()
    cat = _catalog(settings, catalog)
    result = shared_plan(cat, Warehouse.at(warehouse or settings.warehouse), queries)
    doc = plan_json(cat, result, queries)
    if as_json:
        print(json.dumps(doc, indent=1))
        return
    for line in plan_text(result, doc["on_its_own"]):
        console.print(line, highlight=False, soft_wrap=True)


@app.command()
def runs(warehouse: Warehouse_ = None) -> None:
    """List the runs in the warehouse: query, pinned versions, status, batches, rows, when."""
    from jobs.runs.listing import summarize
    from jobs.warehouse import Warehouse

    wh = Warehouse.at(warehouse or load_settings().warehouse)
    table = Table("run", "query", "versions", "status", "batches", "output rows", "created",
                  "segments", title=f"runs in {wh.root}")
    for s in (summarize(wh, run_id) for run_id in wh.runs()):
        table.add_row(s.run_id, s.query, s.versions, s.status,
                      f"{s.batches_done}/{s.batches_total}", f"{s.output_rows:,}", s.created,
                      f"{s.segments}" + (f" (last: {s.last_segment})" if s.last_segment else ""))
    print_table(table)


from jobs.cli import analyze  # noqa: E402, F401  (registers `reprise analyze` on app)


def run() -> None:
    """The ``reprise`` command: :data:`app`, then :func:`~jobs.cli.process_exit.exit_now` with its
    status."""
    try:
        app()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
    exit_now(code)


if __name__ == "__main__":  # python -m jobs.cli.app: the imported module, where `analyze` is too
    from jobs.cli.app import run as run_imported

    run_imported()

"""What ``reprise runs`` shows of each run: query, pinned versions, status, batches, rows, when."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from jobs.runs.engine_choice import engines_summary
from jobs.runs.run_info import RunHeader, RunInfo, load_run_file, run_header
from jobs.runs.run_lock import is_locked
from jobs.runs.run_segments import describe
from jobs.shared.standalone_compare import STANDALONE_SUFFIX
from jobs.warehouse import Warehouse


@dataclass(frozen=True)
class RunSummary:
    """One line of ``reprise runs``."""

    run_id: str
    query: str
    versions: str  # pinned version of each input recording, e.g. "vitals@9"
    status: str  # complete | in progress | incomplete
    batches_done: int
    batches_total: int  # the plan's batches plus the end-of-input flush
    output_rows: int
    created: str  # when the run was made (UTC; older runs: when run.json was last written)
    #: The run's segments (1 until it is continued) and the last one described.
    segments: int = 1
    last_segment: str = ""
    #: Which engine ran which batches (see :func:`jobs.runs.engine_choice.engines_summary`).
    engines: str = ""


def resume_note(done: int, total: int) -> str:
    """What ``replay`` says about a run's committed batches before it runs the rest."""
    if done >= total:
        return " (already complete: nothing to do)"
    return f" (resuming after {done} of {total} committed)" if done else ""


def _manifest(path: str) -> tuple[int, int]:
    """(batches committed, output rows) of a run's manifest table."""
    try:
        table = DeltaTable(path).to_pyarrow_table(columns=["rows_out"])
    except TableNotFoundError:
        return 0, 0
    return table.num_rows, int(sum(v or 0 for v in table.column("rows_out").to_pylist()))


def made_at(run_dir: Path, info: RunInfo | RunHeader) -> datetime:
    """When the run in ``run_dir`` was made: its ``created`` time, else (runs made before it was
    recorded) when its ``run.json`` was last written."""
    if info.created:
        return datetime.fromisoformat(info.created)
    return datetime.fromtimestamp((run_dir / "run.json").stat().st_mtime, UTC)


def run_rank(run_dir: Path, info: RunInfo | RunHeader) -> tuple[list[int], datetime]:
    """How new the run in ``run_dir`` is: its pinned input versions (sorted), then when it was
    made (:func:`made_at`)."""
    return sorted((info.sources or {"input": info.input_version}).values()), made_at(run_dir, info)


def newest_run(warehouse: Warehouse, accept: Callable[[str, RunHeader], bool]) -> str | None:
    """The id of the newest run (:func:`run_rank`) in ``warehouse`` that ``accept(run_id,
    header)`` takes (the ``equals_standalone`` check's runs left out; only the runs' headers
    are read: :func:`~jobs.runs.run_info.run_header`); None when it takes none."""
    best: tuple | None = None
    for run_id in warehouse.runs():
        if run_id.endswith(STANDALONE_SUFFIX):  # the equals_standalone check's, not the asset's
            continue
        run_dir = warehouse.run_dir(run_id)
        head = run_header(run_dir / "run.json")
        if not accept(run_id, head):
            continue
        rank = run_rank(run_dir, head)
        if best is None or rank > best[0]:
            best = (rank, run_id)
    return None if best is None else best[1]


def summarize(warehouse: Warehouse, run_id: str) -> RunSummary:
    """The summary of one run from its ``run.json`` and its manifest."""
    run_dir = warehouse.run_dir(run_id)
    info = load_run_file(run_dir / "run.json")
    sources = info.sources or {"input": info.input_version}
    versions = ", ".join(f"{info.recording if alias == 'input' else alias}@{version}"
                         for alias, version in sources.items())
    done, rows = _manifest(warehouse.run_table(run_id, "manifest"))
    total = len(info.cuts)  # batches + the end-of-input flush
    status = ("complete" if done >= total else
              "in progress" if is_locked(run_dir) else "incomplete")
    created = made_at(run_dir, info)
    segments = info.segments
    return RunSummary(run_id=run_id, query=info.query, versions=versions, status=status,
                      batches_done=done, batches_total=total, output_rows=rows,
                      created=created.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
                      segments=max(1, len(segments)),
                      last_segment=describe(segments[-1]) if len(segments) > 1 else "",
                      engines=engines_summary(info))

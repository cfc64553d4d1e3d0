"""Two complete runs compared table by table (:func:`diff_sides`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from jobs.diff.report import DiffReport
from jobs.diff.sides import DiffError, Side
from jobs.diff.tables import TABLES, TableSide, compare_table, layout_of
from jobs.diff.written import DifferenceTables
from jobs.runs.replay import Replay


def table_side(runner: Replay, side: Side, table: str) -> TableSide:
    """``table`` of ``side``'s run, with its batches' arrival ranges from its manifest."""
    manifest = runner.manifest(side.info.run_id)
    return TableSide(runner.warehouse.run_table(side.info.run_id, table),
                     manifest.column("batch").to_numpy(),
                     manifest.column("seq_lo").to_numpy())


def diff_sides(runner: Replay, a: Side, b: Side, limit: int = 20, output: Path | None = None,
               on_stage: Callable[[str], None] = lambda stage: None) -> DiffReport:
    """Compare the output, late and quarantine tables of two complete runs; ``output``: a new
    directory to write every difference to as Delta tables (all of them, or none)."""
    storage = runner.storage
    written = DifferenceTables(storage, output) if output is not None else None
    notes = []
    tables = {}
    try:
        for table in TABLES:
            sides = (table_side(runner, a, table), table_side(runner, b, table))
            for side, where in zip((a, b), sides, strict=True):
                if not storage.exists(where.path):
                    raise DiffError(f"run {side.info.run_id!r} has no {table} table at "
                                    f"{where.path}; replay it anew")
            schemas = (storage.schema(sides[0].path), storage.schema(sides[1].path))
            layout = layout_of(table, schemas, a.identity)
            on_stage(f"comparing the {table} tables")
            tables[table] = compare_table(storage, layout, sides, schemas, limit, written)
        if written is not None:
            paths = written.commit()
    except BaseException:
        if written is not None:
            written.discard()
        raise
    same_plan = a.info.cuts == b.info.cuts
    batches = [t.first_batch for t in tables.values() if t.first_batch is not None]
    if not same_plan:
        notes.append(f"the runs cut the recording differently (plans {a.info.plan} and "
                     f"{b.info.plan}): batches are not compared")
    first = int(np.min(batches)) if batches and same_plan else None
    return DiffReport(a, b, tables, first, notes, paths if written is not None else [])

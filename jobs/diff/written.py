"""``reprise diff --output DIR``: every difference as a Delta table per table of the runs
(``DIR/output``, ``DIR/late``, ``DIR/quarantine``), written all or nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa

from engine.errors import RepriseError
from jobs.diff.compare import CHANGED_COLUMNS, DIFFERENCE, EMISSION, Layout
from jobs.storage import DeltaStorage, StagedFile
from jobs.storage.staging import stage_table


def differences_schema(layout: Layout, schemas: tuple[pa.Schema, pa.Schema]) -> pa.Schema:
    """The columns of a table of differences: the kind, the row's identity, both batches and
    both sides' values of each compared column."""
    a, b = schemas
    return pa.schema([
        (DIFFERENCE, pa.string()), *(a.field(c) for c in layout.identity),
        *(pa.field(c, pa.float64()) for c in layout.tolerant),
        (EMISSION, pa.int64()), ("batch_a", pa.int64()), ("batch_b", pa.int64()),
        *(pa.field(f"{c}_{s}", side.field(c).type) for c in layout.values
          for s, side in (("a", a), ("b", b))),
        (CHANGED_COLUMNS, pa.string())])


def check_directory(directory: Path) -> None:
    """Refuse an ``--output`` directory that exists and is not empty (or is not a directory)."""
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise RepriseError(f"--output {directory}: exists and is not an empty directory; "
                           "name a new one")


class DifferenceTables:
    """Stages the differences of each table bucket by bucket; :meth:`commit` makes the tables
    (one commit each) once the comparison is done; :meth:`discard` removes everything."""

    def __init__(self, storage: DeltaStorage, directory: Path):
        check_directory(directory)
        self.storage, self.directory = storage, directory
        self._made = not directory.exists()
        self._staged: dict[str, tuple[pa.Schema, list[StagedFile]]] = {}

    def path(self, table: str) -> str:
        return str(self.directory.resolve() / table)

    def start(self, table: str, schema: pa.Schema) -> None:
        """Begin ``table``'s differences with columns ``schema``."""
        self._staged[table] = (schema, [])

    def add(self, table: str, differences: pa.Table) -> None:
        """Stage some of ``table``'s differences."""
        if differences.num_rows == 0:
            return
        schema, files = self._staged[table]
        rows = differences.select(schema.names).cast(schema)
        files.append(stage_table(self.storage, self.path(table), rows))

    def commit(self) -> list[str]:
        """Commit every table; their paths."""
        for table, (schema, files) in self._staged.items():
            self.storage.commit_files(self.path(table), files, schema)
        return [self.path(table) for table in self._staged]

    def discard(self) -> None:
        """Remove what was written (the directory too when this made it)."""
        if self._made:
            shutil.rmtree(self.directory, ignore_errors=True)
        else:
            for table in self._staged:
                shutil.rmtree(self.path(table), ignore_errors=True)

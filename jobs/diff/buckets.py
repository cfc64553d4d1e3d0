"""A run's table streamed into hash buckets of its rows' identity, spilled to Arrow IPC files,
so that a comparison holds one bucket of each side at a time, never a whole output."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from jobs.execution.bucketing import key_hashes
from jobs.storage import DeltaStorage

#: Rows of both sides a bucket holds on average: bounds the memory of one comparison.
ROWS_PER_BUCKET = 200_000
#: The column of the spilled rows holding their identity's hash (:func:`row_hashes`).
ROW_HASH = "__row_hash"
#: Rows read from a Parquet file at a time.
READ_ROWS = 65_536
#: A text identity column hashes into this range (a prime) before the columns are combined.
HASH_SPACE = 2**61 - 1
#: The hash of a null number or time.
NULL_HASH = 0x9E3779B97F4A7C15


def bucket_count(rows: int) -> int:
    """Buckets for ``rows`` rows of both sides together."""
    return max(1, math.ceil(rows / ROWS_PER_BUCKET))


def column_hashes(column: pa.ChunkedArray) -> np.ndarray:
    """A stable 64-bit hash of each value of ``column``, equal for equal values (nulls
    included): numbers and times hashed as they are, other values (text) once per distinct
    value."""
    kind = column.type
    if (pa.types.is_integer(kind) or pa.types.is_temporal(kind) or pa.types.is_boolean(kind)
            or pa.types.is_floating(kind)):
        floating = pa.types.is_floating(kind)
        numbers = column.cast(pa.float64() if floating else pa.int64())
        values = numbers.fill_null(0).to_numpy()
        hashed = pd.util.hash_array(values + 0.0 if floating else values)  # (-0.0 is 0.0)
        hashed[numbers.is_null().to_numpy(zero_copy_only=False)] = np.uint64(NULL_HASH)
        return hashed
    return key_hashes(column) % np.uint64(HASH_SPACE)


def row_hashes(table: pa.Table, columns: list[str]) -> np.ndarray:
    """A stable 64-bit hash of each row's values of ``columns`` (equal values, nulls included,
    hash alike in either run)."""
    hashed = np.zeros(table.num_rows, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for name in columns:
            hashed = hashed * np.uint64(1_000_003) + column_hashes(table.column(name))
    return hashed


def scan(storage: DeltaStorage, path: str, schema: pa.Schema) -> Iterator[pa.Table]:
    """The rows of the Delta table at ``path``, a few thousand at a time, with the
    columns of ``schema`` in its types (a column a file lacks is null)."""
    for live in storage.live_files(path):
        if "://" in live.path:
            fs, inner = pafs.FileSystem.from_uri(live.path)
            source = fs.open_input_file(inner)
        else:
            source = live.path
        file = pq.ParquetFile(source)
        present = [n for n in schema.names if n in file.schema_arrow.names]
        for batch in file.iter_batches(batch_size=READ_ROWS, columns=present):
            yield conformed(pa.Table.from_batches([batch]), schema)


def conformed(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with the columns of ``schema``, cast to its types, missing ones null."""
    columns = [table.column(f.name).cast(f.type) if f.name in table.column_names
               else pa.nulls(table.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


class Spill:
    """Rows of the two sides (0 and 1) by bucket: Arrow IPC files in a temporary directory, or
    in memory when there is one bucket."""

    def __init__(self, buckets: int, schemas: tuple[pa.Schema, pa.Schema]):
        self.buckets = buckets
        self.schemas = tuple(s.append(pa.field(ROW_HASH, pa.uint64())) for s in schemas)
        self._memory: dict[int, list[pa.Table]] = {0: [], 1: []}
        self._directory = tempfile.TemporaryDirectory(prefix="reprise-diff-") \
            if buckets > 1 else None
        self._writers: dict[tuple[int, int], ipc.RecordBatchFileWriter] = {}

    def add(self, side: int, table: pa.Table, hashes: np.ndarray) -> None:
        """Add rows of ``side`` whose identities hash to ``hashes`` (kept as
        :data:`ROW_HASH`; the hash picks the bucket)."""
        table = table.append_column(ROW_HASH, pa.array(hashes, pa.uint64()))
        of = (hashes % np.uint64(self.buckets)).astype(np.int64)
        if self._directory is None:
            self._memory[side].append(table)
            return
        order = np.argsort(of, kind="stable")
        ordered, sorted_of = table.take(pa.array(order)), of[order]
        bounds = np.searchsorted(sorted_of, np.arange(self.buckets + 1))
        for bucket in range(self.buckets):
            lo, hi = int(bounds[bucket]), int(bounds[bucket + 1])
            if hi > lo:
                self._writer(side, bucket).write_table(ordered.slice(lo, hi - lo))

    def _writer(self, side: int, bucket: int) -> ipc.RecordBatchFileWriter:
        writer = self._writers.get((side, bucket))
        if writer is None:
            writer = ipc.new_file(self._file(side, bucket), self.schemas[side])
            self._writers[(side, bucket)] = writer
        return writer

    def _file(self, side: int, bucket: int) -> str:
        assert self._directory is not None
        return str(Path(self._directory.name) / f"{side}-{bucket}.arrow")

    def rows(self, side: int, bucket: int) -> pa.Table:
        """The rows of ``side`` in ``bucket`` (call once every row is added)."""
        if self._directory is None:
            return pa.concat_tables([self.schemas[side].empty_table(), *self._memory[side]])
        writer = self._writers.pop((side, bucket), None)
        if writer is None:
            return self.schemas[side].empty_table()
        writer.close()
        with ipc.open_file(self._file(side, bucket)) as reader:
            table = reader.read_all()
        Path(self._file(side, bucket)).unlink()
        return table

    def close(self) -> None:
        """Remove the spilled files."""
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        if self._directory is not None:
            self._directory.cleanup()

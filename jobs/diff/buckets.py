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

from jobs.execution.key_codes import arrow_key_codes
from jobs.storage import DeltaStorage

#: Rows of both sides a bucket holds on average: bounds the memory of one comparison.
ROWS_PER_BUCKET = 200_000
#: The column of the spilled rows holding their identity's hash (:func:`row_hashes`).
ROW_HASH = "__row_hash"
#: Rows read from a Parquet file at a time.
READ_ROWS = 65_536
#: The hash of a null number or time.
NULL_HASH = 0x9E3779B97F4A7C15


def bucket_count(rows: int) -> int:
    """Buckets for ``rows`` rows of both sides together."""
    return max(1, math.ceil(rows / ROWS_PER_BUCKET))


def column_values(column: pa.ChunkedArray) -> np.ndarray:
    """A 64-bit word for each value of ``column``, equal for equal values (nulls included):
    numbers and times as their bits (a double's ``-0.0`` as ``0.0``), other values (text) a
    hash of each distinct value."""
    kind = column.type
    if (pa.types.is_integer(kind) or pa.types.is_temporal(kind) or pa.types.is_boolean(kind)
            or pa.types.is_floating(kind)):
        floating = pa.types.is_floating(kind)
        numbers = column.cast(pa.float64() if floating else pa.int64())
        values = np.asarray(numbers.fill_null(0) if numbers.null_count else numbers)
        words = (values + 0.0 if floating else values).view(np.uint64)
        if numbers.null_count:
            words = np.where(np.asarray(numbers.is_null(), dtype=bool), np.uint64(NULL_HASH),
                             words)
        return words
    codes, distinct = arrow_key_codes(column)  # (each distinct text hashed once)
    return np.append(pd.util.hash_array(distinct, categorize=False),
                     np.uint64(NULL_HASH))[codes]


def mixed(words: np.ndarray) -> np.ndarray:
    """``words`` through the finaliser of SplitMix64 (every bit of a word moves every bit of
    its hash)."""
    words = words ^ (words >> np.uint64(30))
    words = words * np.uint64(0xBF58476D1CE4E5B9)
    words = words ^ (words >> np.uint64(27))
    words = words * np.uint64(0x94D049BB133111EB)
    return words ^ (words >> np.uint64(31))


def row_hashes(table: pa.Table, columns: list[str]) -> np.ndarray:
    """A stable 64-bit hash of each row's values of ``columns`` (equal values, nulls included,
    hash alike in either run)."""
    hashed = np.zeros(table.num_rows, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for name in columns:
            hashed = mixed(hashed * np.uint64(1_000_003) + column_values(table.column(name)))
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
        # (a bucket number fits 16 bits for outputs of up to 13 billion rows, and numpy sorts
        # 16-bit numbers by radix, in linear time)
        of = (hashes % np.uint64(self.buckets)).astype(
            np.uint16 if self.buckets <= 2**16 else np.int64)
        if self._directory is None:
            self._memory[side].append(table)
            return
        order = np.argsort(of, kind="stable")
        ordered = table.take(pa.array(order))
        bounds = np.append(0, np.cumsum(np.bincount(of, minlength=self.buckets)))
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
            return pa.concat_tables([self.schemas[side].empty_table(), *self._memory[side]]
                                    ).combine_chunks()
        writer = self._writers.pop((side, bucket), None)
        if writer is None:
            return self.schemas[side].empty_table()
        writer.close()
        with pa.memory_map(self._file(side, bucket)) as source:
            table = ipc.open_file(source).read_all().combine_chunks()  # (one chunk: faster
            # to take from, and a copy of the mapped file)
        Path(self._file(side, bucket)).unlink()
        return table

    def close(self) -> None:
        """Remove the spilled files."""
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        if self._directory is not None:
            self._directory.cleanup()

"""Reading a recording's input files in arrival order (:func:`read_range`): a file in the
key-hash layout (:mod:`jobs.recordings.layout`) numbers its rows by its arrival column, and a
bucket's task reads only the row groups of its hash range."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from engine.ordering import in_order
from jobs.storage import ARRIVAL_COLUMN, KEY_HASH_COLUMN, LAYOUT_COLUMNS, LAYOUT_KEY
from jobs.storage.locations import filesystem, is_remote


@dataclass(frozen=True)
class FileRows:
    """Rows of one input file as :func:`read_range` read them."""

    table: pa.Table
    seq: np.ndarray  # their arrival sequence, ascending
    hashes: np.ndarray | None  # their key hashes, when the file is laid out by the key asked
    nbytes: int  # the compressed bytes of the column chunks read


def read_range(files: list[dict], columns: Sequence[str], dictionary: list[str], lo: int,
               hi: int, key: str | None = None, hashes: tuple[int, int] | None = None
               ) -> list[FileRows]:
    """Each input file's rows with arrival sequence in ``[lo, hi)`` (``columns``; those of
    ``dictionary`` read dictionary-encoded), in arrival order.

    A file in the key-hash layout (:mod:`jobs.recordings.layout`) numbers its rows by its
    arrival column; when it is laid out by ``key``, the rows' key hashes come with them, and
    ``hashes`` (a range ``[lo, hi)`` of them) reads only the row groups that may hold such
    keys (by their statistics; the rows of other keys in them are the caller's to drop)."""
    out = []
    for f in files:
        with pq.ParquetFile(_source(f["uri"], whole=not hashes), read_dictionary=dictionary,
                            pre_buffer=is_remote(f["uri"])) as parquet:
            meta, names = parquet.metadata, parquet.schema_arrow.names
            laid = (meta.metadata or {}).get(LAYOUT_KEY.encode()) == (key or "").encode()
            extra = [c for c in LAYOUT_COLUMNS if c in names and (laid or c == ARRIVAL_COLUMN)]
            groups = [g for g in range(meta.num_row_groups)
                      if not (laid and hashes) or _overlaps(meta.row_group(g), names, hashes)]
            read = [*columns, *extra]
            table = parquet.read_row_groups(groups, columns=read)
        nbytes = sum(meta.row_group(g).column(i).total_compressed_size for g in groups
                     for i in range(meta.num_columns)
                     if meta.row_group(g).column(i).path_in_schema in read)
        table, seq, found = _in_arrival_order(table, f["offset"])
        inside = (seq >= lo) & (seq < hi)
        if not inside.all():
            table, seq = table.filter(pa.array(inside)), seq[inside]
            found = None if found is None else found[inside]
        out.append(FileRows(table, seq, found if laid else None, nbytes))
    return out


def _source(uri: str, whole: bool) -> pa.NativeFile:
    """The input file ``uri`` opened for reading. On an object store each read is a request:
    a file read ``whole`` is fetched in one GET (a HEAD first), else its footer and then the
    row groups read, their column chunks coalesced (``pre_buffer``) rather than a GET each."""
    fs, path = filesystem(uri)
    if whole and is_remote(uri):
        with fs.open_input_stream(path) as stream:
            return pa.BufferReader(stream.read_buffer())
    return fs.open_input_file(path)


def _overlaps(group: pq.RowGroupMetaData, names: list[str], hashes: tuple[int, int]) -> bool:
    """Whether a row group's key hashes (by its statistics) may fall in ``hashes``."""
    stats = group.column(names.index(KEY_HASH_COLUMN)).statistics
    if stats is None or not stats.has_min_max:
        return True
    return stats.max >= hashes[0] and stats.min < hashes[1]


def _in_arrival_order(table: pa.Table, offset: int
                      ) -> tuple[pa.Table, np.ndarray, np.ndarray | None]:
    """A file's rows (``table``, as read) in arrival order, their arrival sequence (the file's
    first at ``offset``) and their key hashes (None without the column); without the layout's
    columns."""
    if ARRIVAL_COLUMN not in table.column_names:
        return table, np.arange(offset, offset + table.num_rows, dtype="int64"), None
    position = table.column(ARRIVAL_COLUMN).to_numpy()
    if not in_order([position]):
        order = np.argsort(position, kind="stable")
        table, position = table.take(pa.array(order)), position[order]
    found = (table.column(KEY_HASH_COLUMN).to_numpy()
             if KEY_HASH_COLUMN in table.column_names else None)
    return table.drop_columns([c for c in LAYOUT_COLUMNS if c in table.column_names]), (
        position + offset), found

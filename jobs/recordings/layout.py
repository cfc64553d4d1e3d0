"""The key-hash layout of a recording's data files: each file's rows clustered by ranges of
their key's 64-bit hash into Parquet row groups, so that a bucket's task reads only the row
groups of its bucket's hash range (:mod:`jobs.execution.bucketing`) whatever the bucket count.

A file in the layout holds two columns besides the recording's (not in the table's Delta schema,
so readers of the table never see them): :data:`~jobs.storage.ARRIVAL_COLUMN`, each row's
position in the file's arrival order (the order the rows were given in), and
:data:`~jobs.storage.KEY_HASH_COLUMN`, the hash of its key (with Parquet statistics: a row
group's min and max bound its range). Its footer names the hashed key column
(:data:`~jobs.storage.LAYOUT_KEY`). The arrival sequence of an event is therefore the same in
the layout as without it: readers number a file's rows by the arrival column (see
:func:`jobs.execution.direct_exchange.read_range`, :func:`jobs.storage.base.positioned`).
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from jobs.execution.bucketing import key_hashes
from jobs.storage import ARRIVAL_COLUMN, KEY_HASH_COLUMN, LAYOUT_KEY, DeltaStorage, StagedFile
from jobs.storage.locations import filesystem
from jobs.storage.staging import stage_table

#: Hash ranges (row groups at most) of a file: the top bits of the hash. A power of two, so
#: that the ranges of 2, 4, ..., 64 buckets are made of whole row groups.
RANGES = 64
_SHIFT = np.uint64(64 - RANGES.bit_length() + 1)


def row_groups(table: pa.Table, key: str) -> list[pa.Table]:
    """``table``'s rows with the layout's columns, one table per non-empty hash range in
    range order, rows in arrival order within each."""
    hashes = key_hashes(table.column(key))
    ranges = (hashes >> _SHIFT).astype("int64")
    order = np.argsort(ranges, kind="stable")
    laid = table.append_column(ARRIVAL_COLUMN, pa.array(np.arange(table.num_rows, dtype="int64"))
                               ).append_column(KEY_HASH_COLUMN, pa.array(hashes, pa.uint64()))
    laid = laid.take(pa.array(order))
    bounds = np.searchsorted(ranges[order], np.arange(RANGES + 1))
    return [laid.slice(a, b - a) for a, b in pairwise(bounds) if b > a]


def stage_laid_out(storage: DeltaStorage, path: str, table: pa.Table, key: str,
                   tag: str | None = None) -> StagedFile:
    """``table`` staged as one data file of the recording at ``path`` in the layout (hashing
    ``key``), for :meth:`~jobs.storage.DeltaStorage.commit_files` (``tag``: its staging
    directory's name, see :func:`~jobs.storage.staging.stage_table`)."""
    # (the arrival positions rise within a row group: delta-encoded, a fifth of their size)
    return stage_table(storage, path, table, row_groups(table, key), {LAYOUT_KEY: key}, tag,
                       packed=[ARRIVAL_COLUMN])


def layout_key(uri: str) -> str | None:
    """The key column the data file ``uri`` is laid out by (its footer), or None: not in the
    layout."""
    fs, inner = filesystem(uri)
    with fs.open_input_file(inner) as handle:
        found = (pq.ParquetFile(handle).metadata.metadata or {}).get(LAYOUT_KEY.encode())
    return None if found is None else found.decode()


def layout_note(recording: str, files: list[dict], key: str) -> str | None:
    """A note for a replay whose bucket tasks read ``files`` (a run's input files) by ``key``
    when some of them are not laid out by it (each task then reads those whole), or None."""
    plain = sum(layout_key(f["uri"]) != key for f in files)
    if not plain:
        return None
    return (f"{plain} of the {len(files)} files of recording {recording!r} are not in the "
            f"key-hash layout: every bucket's task reads them whole; `reprise optimize "
            f"{recording}` rewrites them")

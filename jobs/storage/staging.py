"""A small table staged as one Parquet file for a commit the driver makes itself."""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from jobs.storage import DeltaStorage, StagedFile, file_stats


def stage_table(storage: DeltaStorage, path: str, table: pa.Table,
                row_groups: Sequence[pa.Table] | None = None,
                metadata: Mapping[str, str] | None = None, tag: str | None = None,
                packed: Sequence[str] = ()) -> StagedFile:
    """Write ``table`` as one Parquet file in a fresh staging directory of the table at ``path``
    (a local one), ready for :meth:`DeltaStorage.commit_files`, with its Delta stats.

    ``row_groups``: write these tables instead, each as one row group, in order (of one schema),
    with ``metadata`` in the file's footer and the integer columns ``packed`` delta-encoded
    (no dictionary); ``tag``: the staging directory's name (default: a fresh one)."""
    directory = Path(storage.staging_dir(path, tag or uuid.uuid4().hex))  # names only
    directory.mkdir(parents=True)
    file = str(directory / "part-00000.parquet")
    footer: list[pq.FileMetaData] = []
    if row_groups is None:
        pq.write_table(table, file, metadata_collector=footer)
    else:
        schema = (row_groups[0] if row_groups else table).schema
        schema = schema.with_metadata({**(schema.metadata or {}), **(metadata or {})})
        with pq.ParquetWriter(file, schema, metadata_collector=footer,
                              use_dictionary=[n for n in schema.names if n not in packed],
                              column_encoding=dict.fromkeys(packed, "DELTA_BINARY_PACKED")
                              or None) as writer:
            for group in row_groups:
                writer.write_table(group.replace_schema_metadata(schema.metadata),
                                   row_group_size=max(1, group.num_rows))
    rows, stats = file_stats(file, footer[0])
    return StagedFile(file, os.path.getsize(file), rows, stats)

"""A small table staged as one Parquet file for a commit the driver makes itself."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from jobs.storage.base import DeltaStorage, StagedFile
from jobs.storage.file_stats import file_stats
from jobs.storage.locations import filesystem, is_remote


def stage_table(storage: DeltaStorage, path: str, table: pa.Table,
                row_groups: Sequence[pa.Table] | None = None,
                metadata: Mapping[str, str] | None = None, tag: str | None = None,
                packed: Sequence[str] = ()) -> StagedFile:
    """Write ``table`` as one Parquet file in a fresh staging directory of the table at ``path``
    (a local path, or a URI: the object is written whole, never renamed), ready for
    :meth:`DeltaStorage.commit_files`, with its Delta stats.

    ``row_groups``: write these tables instead, each as one row group, in order (of one schema),
    with ``metadata`` in the file's footer and the integer columns ``packed`` delta-encoded
    (no dictionary); ``tag``: the staging directory's name (default: a fresh one)."""
    file = f"{storage.staging_dir(path, tag or uuid.uuid4().hex)}/part-00000.parquet"  # names
    fs, inner = filesystem(file)
    if not is_remote(file):  # (an object store has no directories)
        Path(inner).parent.mkdir(parents=True)
    footer: list[pq.FileMetaData] = []
    if row_groups is None:
        pq.write_table(table, inner, filesystem=fs, metadata_collector=footer)
    else:
        schema = (row_groups[0] if row_groups else table).schema
        schema = schema.with_metadata({**(schema.metadata or {}), **(metadata or {})})
        with pq.ParquetWriter(inner, schema, filesystem=fs, metadata_collector=footer,
                              use_dictionary=[n for n in schema.names if n not in packed],
                              column_encoding=dict.fromkeys(packed, "DELTA_BINARY_PACKED")
                              or None) as writer:
            for group in row_groups:
                writer.write_table(group.replace_schema_metadata(schema.metadata),
                                   row_group_size=max(1, group.num_rows))
    rows, stats = file_stats(file, footer[0])
    return StagedFile(file, fs.get_file_info(inner).size, rows, stats)

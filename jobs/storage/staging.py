"""A small table staged as one Parquet file for a commit the driver makes itself."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from jobs.storage import DeltaStorage, StagedFile, file_stats


def stage_table(storage: DeltaStorage, path: str, table: pa.Table) -> StagedFile:
    """Write ``table`` as one Parquet file in a fresh staging directory of the table at ``path``
    (a local one), ready for :meth:`DeltaStorage.commit_files`, with its Delta stats."""
    directory = Path(storage.staging_dir(path, uuid.uuid4().hex))  # names only
    directory.mkdir(parents=True)
    file = str(directory / "part-00000.parquet")
    footer: list[pq.FileMetaData] = []
    pq.write_table(table, file, metadata_collector=footer)
    rows, stats = file_stats(file, footer[0])
    return StagedFile(file, os.path.getsize(file), rows, stats)

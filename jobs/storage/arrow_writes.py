"""A Spark DataFrame written as Parquet files on an object store by the executors through pyarrow
(Spark's own writer reaches ``s3://`` only with the ``hadoop-aws`` jars), staged for a commit.

Each partition is one file, named by the partition's number first so that the files' order by
name is the partitions' order (as Spark names its own). A retried task writes a file of another
name; only the files of the attempts Spark keeps are committed, and the others are removed as
unreferenced files (:mod:`jobs.storage.orphans`). A local directory gets Spark's own writer
(:func:`stage_dataframe`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from functools import partial

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import TaskContext
from pyspark.sql import DataFrame

from jobs.storage.base import StagedFile
from jobs.storage.file_stats import file_stats
from jobs.storage.locations import filesystem, is_remote

_WRITTEN = "path string, size long, rows long, stats string"


def _write_partition(directory: str, batches: Iterator[pa.RecordBatch]
                     ) -> Iterator[pa.RecordBatch]:
    """mapInArrow: the partition's rows as one Parquet file under ``directory`` (none when it
    has no rows); one row describing it."""
    table = pa.Table.from_batches(list(batches))
    if table.num_rows == 0:
        return
    file = f"{directory}/part-{TaskContext.get().partitionId():05d}-{uuid.uuid4().hex}.parquet"
    fs, inner = filesystem(file)
    footer: list[pq.FileMetaData] = []
    pq.write_table(table, inner, filesystem=fs, metadata_collector=footer)
    rows, stats = file_stats(file, footer[0])
    yield pa.RecordBatch.from_pylist([{"path": file, "size": fs.get_file_info(inner).size,
                                       "rows": rows, "stats": stats}])


def write_files(df: DataFrame, directory: str) -> list[StagedFile]:
    """Write ``df`` as Parquet files under ``directory`` (a URI), one per non-empty partition;
    the staged files in partition order."""
    written = df.mapInArrow(partial(_write_partition, directory), _WRITTEN).collect()
    return [StagedFile(path=r.path, size=r.size, num_records=r.rows, stats=r.stats)
            for r in sorted(written, key=lambda r: r.path)]


def stage_dataframe(df: DataFrame, directory: str) -> list[StagedFile]:
    """Write ``df`` as Parquet files under ``directory`` (a new local directory, or a URI: see
    :func:`write_files`) for a commit; the staged files in partition order."""
    if is_remote(directory):
        return write_files(df, directory)
    df.write.mode("error").parquet(directory)
    fs, inner = filesystem(directory)
    written = sorted((i for i in fs.get_file_info(pa.fs.FileSelector(inner))
                      if i.path.endswith(".parquet")), key=lambda i: i.path)
    return [StagedFile(path=i.path, size=i.size, num_records=rows, stats=stats)
            for i in written for rows, stats in [file_stats(i.path)]]

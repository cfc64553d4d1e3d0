"""Spark DataFrames of Parquet files on an object store, read by the executors through pyarrow.

Spark's own Parquet reader reaches ``s3://`` only with the ``hadoop-aws`` jars and the AWS SDK
bundle (several hundred megabytes); pyarrow, which every executor has, reads the objects
directly with the standard AWS settings of its environment. Each file is one task: the
executor that runs it reads the file from the store (the driver reads none of it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from jobs.storage.base import ARRIVAL_COLUMN, FILE_COLUMN, ROW_COLUMN
from jobs.storage.locations import filesystem


def read_file(uri: str, schema: pa.Schema, positioned: bool) -> pa.Table:
    """The rows of the Parquet file ``uri`` in ``schema`` (a column the file lacks is null);
    with ``positioned``, :data:`FILE_COLUMN` and :data:`ROW_COLUMN` (its position in the file's
    arrival order: the file's :data:`ARRIVAL_COLUMN`, else the row's index) as the last
    columns."""
    fs, inner = filesystem(uri)
    table = pq.read_table(inner, filesystem=fs)
    columns = [table.column(f.name).cast(f.type) if f.name in table.column_names
               else pa.nulls(table.num_rows, f.type) for f in schema]
    if positioned:
        rows = (table.column(ARRIVAL_COLUMN).cast(pa.int64())
                if ARRIVAL_COLUMN in table.column_names
                else pa.array(np.arange(table.num_rows, dtype="int64")))
        columns += [pa.array([uri] * table.num_rows, pa.string()), rows]
        schema = schema.append(pa.field(FILE_COLUMN, pa.string())).append(
            pa.field(ROW_COLUMN, pa.int64()))
    return pa.Table.from_arrays(columns, schema=schema)


def _read_batches(schema: pa.Schema, positioned: bool,
                  batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow: each batch's file URIs read in turn."""
    for batch in batches:
        for uri in batch.column(0).to_pylist():
            yield from read_file(uri, schema, positioned).to_batches()


def read_files(spark: SparkSession, uris: Sequence[str], schema: pa.Schema,
               positioned: bool = False) -> DataFrame:
    """The rows of the Parquet files ``uris`` in ``schema`` (and, with ``positioned``, each
    row's file and position: see :func:`read_file`), one Spark task per file."""
    out = schema
    if positioned:
        out = out.append(pa.field(FILE_COLUMN, pa.string())).append(
            pa.field(ROW_COLUMN, pa.int64()))
    names = spark.createDataFrame([(u,) for u in uris], "uri string").repartition(
        max(1, len(uris)))
    return names.mapInArrow(partial(_read_batches, schema, positioned), from_arrow_schema(out))

"""Keys into buckets: one hash for both exchanges, computed in Python on the key values
(:func:`key_buckets`), so that a key's bucket is the same whether Spark's shuffle or each bucket's
own task brings it its events (:func:`bucketed` adds it to a Spark frame)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import LongType, StructField, StructType

from jobs.execution.key_codes import arrow_key_codes

BUCKET = "__bucket"


def key_buckets(keys: pa.ChunkedArray, buckets: int) -> np.ndarray:
    """Bucket of each key: pandas' stable hash of the key value modulo ``buckets`` (each
    distinct key hashed once; null is a key of its own)."""
    codes, distinct = arrow_key_codes(keys)
    values = np.concatenate([distinct.astype(object), np.array([None], dtype=object)])
    of_value = (pd.util.hash_array(values) % np.uint64(buckets)).astype("int64")
    return of_value[codes]


def bucketed(df: DataFrame, key: str, buckets: int) -> DataFrame:
    """``df`` with the bucket column :data:`BUCKET`: :func:`key_buckets` of its ``key``,
    computed by Spark's Python workers on the Arrow batches (the values as the direct exchange
    reads them from the files, so both exchanges give a key the same bucket)."""
    schema = StructType([*df.schema.fields, StructField(BUCKET, LongType(), False)])

    def add(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            of = key_buckets(pa.chunked_array([batch.column(key)]), buckets)
            yield pa.RecordBatch.from_arrays([*batch.columns, pa.array(of, pa.int64())],
                                             names=[*batch.schema.names, BUCKET])

    return df.mapInArrow(add, schema)

"""Keys into buckets: one hash for both exchanges, computed in Python on the key values
(:func:`key_hashes`), so that a key's bucket is the same whether Spark's shuffle or each bucket's
own task brings it its events (:func:`bucketed` adds it to a Spark frame).

A bucket is a contiguous range of the 64-bit hash (:func:`hash_buckets`, :func:`hash_range`), so
that a recording whose files are clustered by key hash (:mod:`jobs.recordings.layout`) lets a
bucket's task read only the row groups of its range, whatever the bucket count. Runs made before
the ranges bucketed by the hash modulo the bucket count (``modulo``): they keep it.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import LongType, StructField, StructType

from jobs.execution.key_codes import arrow_key_codes

BUCKET = "__bucket"
#: The number of distinct 64-bit hashes.
HASHES = 2**64


def key_hashes(keys: pa.ChunkedArray) -> np.ndarray:
    """A stable 64-bit hash (uint64) of each key: pandas' hash of the key value (each distinct
    key hashed once; null is a key of its own)."""
    codes, distinct = arrow_key_codes(keys)
    values = np.concatenate([distinct.astype(object), np.array([None], dtype=object)])
    return pd.util.hash_array(values)[codes]


def hash_buckets(hashes: np.ndarray, buckets: int, modulo: bool = False) -> np.ndarray:
    """The bucket (int64) of each key hash: its range of ``buckets`` equal ranges of the hash
    (:func:`hash_range`); ``modulo``: the hash modulo ``buckets`` (runs made before the
    ranges)."""
    hashes = np.asarray(hashes, dtype=np.uint64)
    if modulo:
        return (hashes % np.uint64(buckets)).astype("int64")
    if buckets == 1:
        return np.zeros(len(hashes), "int64")
    return (hashes // np.uint64(-(-HASHES // buckets))).astype("int64")


def hash_range(bucket: int, buckets: int) -> tuple[int, int]:
    """The key hashes ``[lo, hi)`` of ``bucket`` of ``buckets`` (see :func:`hash_buckets`)."""
    width = -(-HASHES // buckets)
    return bucket * width, min((bucket + 1) * width, HASHES)


def in_group(of: np.ndarray, group: range) -> np.ndarray:
    """Whether each bucket of ``of`` is one of the consecutive buckets ``group``."""
    return (of >= group.start) & (of < group.stop)


def bucket_groups(buckets: int, tasks: int) -> list[range]:
    """The buckets cut into ``tasks`` groups of consecutive buckets (fewer when there are fewer
    buckets), their sizes differing by one at most."""
    count = max(1, min(buckets, tasks))
    cuts = [buckets * i // count for i in range(count + 1)]
    return [range(a, b) for a, b in pairwise(cuts)]


def key_buckets(keys: pa.ChunkedArray, buckets: int, modulo: bool = False) -> np.ndarray:
    """Bucket of each key: :func:`hash_buckets` of its :func:`key_hashes`."""
    return hash_buckets(key_hashes(keys), buckets, modulo)


def bucketed(df: DataFrame, key: str, buckets: int, modulo: bool = False) -> DataFrame:
    """``df`` with the bucket column :data:`BUCKET`: :func:`key_buckets` of its ``key``,
    computed by Spark's Python workers on the Arrow batches (the values as the direct exchange
    reads them from the files, so both exchanges give a key the same bucket)."""
    schema = StructType([*df.schema.fields, StructField(BUCKET, LongType(), False)])

    def add(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            of = key_buckets(pa.chunked_array([batch.column(key)]), buckets, modulo)
            yield pa.RecordBatch.from_arrays([*batch.columns, pa.array(of, pa.int64())],
                                             names=[*batch.schema.names, BUCKET])

    return df.mapInArrow(add, schema)

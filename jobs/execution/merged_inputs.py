"""Materialise the merged input of a multi-input query as a Delta table of its run.

The query's family says how its recordings merge (:meth:`engine.family.QueryFamily.input_merge`:
the order, the stream and time columns, each column's merged name); writing the merge once, with
the run, pins the arrival sequence every batch plan, resume and validation of the run refer to.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from engine.catalog import Catalog
from engine.family import InputMerge, MergedStream
from engine.operator import SEQ
from engine.registry import family_of
from engine.specs import QuerySpec, RecordingSpec
from jobs.execution.arrival import SPARK_TYPES, input_index, sequenced
from jobs.storage import DeltaStorage, Txn
from jobs.warehouse import Warehouse

_ORDER, _STREAM_SEQ = "__order", "__stream_seq"


def _stream_events(storage: DeltaStorage, path: str, version: int, order: int,
                   stream: MergedStream, merge: InputMerge, time_column: str,
                   after: int | None = None) -> DataFrame:
    """The stream's events at ``version`` (only those of commits after version ``after``)."""
    files = input_index(storage, path, version)
    first = min((f.offset for f in files if after is not None and f.commit_version > after),
                default=0 if after is None else sum(f.rows for f in files))
    events = sequenced(storage, path, version, [asdict(f) for f in files], first,
                       sum(f.rows for f in files), time_column)
    return events.select(
        F.lit(order).alias(_ORDER), F.col(SEQ).alias(_STREAM_SEQ),
        F.lit(stream.stream).alias(merge.stream_column),
        F.col(time_column).alias(merge.time_column),
        *(F.col(c).alias(name) for c, name in stream.columns.items()))


def input_merge(catalog: Catalog, query: QuerySpec) -> InputMerge:
    """How ``query``'s family merges its recordings."""
    merge = family_of(query.kind, query.source).input_merge(query, catalog.recordings)
    if merge is None:
        raise ValueError(f"query {query.name!r} reads one recording: there is nothing to merge")
    return merge


def merged_events(storage: DeltaStorage, warehouse: Warehouse, catalog: Catalog,
                  query: QuerySpec, versions: dict[str, int], merged: RecordingSpec,
                  after: dict[str, int] | None = None, files: int | None = None) -> DataFrame:
    """``query``'s inputs at ``versions`` merged in order, with the stream's position ``__order``
    (only the events of commits after ``after[stream]`` when given), in ``files`` sorted ranges
    when given."""
    merge = input_merge(catalog, query)
    parts = [_stream_events(storage, warehouse.recording(s.recording), versions[s.stream], order,
                            s, merge, catalog.recording(s.recording).time,
                            None if after is None else after[s.stream])
             for order, s in enumerate(merge.streams)]
    union = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), parts)
    order = (F.col(merge.time_column).asc_nulls_first(), F.col(_ORDER), F.col(_STREAM_SEQ))
    # a global sort cut into ``files`` ranges (``orderBy`` would take the shuffle partitions)
    ordered = (union.orderBy(*order) if files is None else
               union.repartitionByRange(files, *order).sortWithinPartitions(*order))
    columns = [F.lit(0).cast("bigint").alias(merge.key_column)] + [
        F.col(c).cast(SPARK_TYPES[t]).alias(c)
        for c, t in merged.columns.items() if c != merge.key_column]
    return ordered.select(*columns, _ORDER)


def merge_inputs(storage: DeltaStorage, warehouse: Warehouse, catalog: Catalog,
                 query: QuerySpec, versions: dict[str, int], merged: RecordingSpec,
                 target: str, run_id: str, files: int, segment: int = 0,
                 after: dict[str, int] | None = None) -> int:
    """Write ``query``'s merged input to ``target`` once (idempotent) as ``files`` Parquet files
    (the run's bucket count) at most; return its version. A continuation (``segment`` >= 1)
    appends the events of the commits after ``after``."""
    events = merged_events(storage, warehouse, catalog, query, versions, merged, after, files)
    storage.write(events.drop(_ORDER), target, txn=Txn(f"{run_id}/input", segment),
                  metadata={"reprise.run": run_id, "reprise.inputs": json.dumps(versions),
                            "reprise.segment": str(segment)})
    return storage.version(target)


def merged_versions(storage: DeltaStorage, target: str, run_id: str, segment: int
                    ) -> dict[str, int] | None:
    """The recording versions whose events the merged input at ``target`` holds for
    ``segment`` of run ``run_id`` when an earlier attempt of that segment (interrupted before
    it recorded the segment in ``run.json``) wrote it: its last commit; None when it holds no
    such commit (the segment's input is not written yet)."""
    if not storage.exists(target):
        return None
    (last,) = storage.history(target, limit=1)
    meta = storage.commit_metadata(last)
    if meta.get("reprise.run") != run_id or meta.get("reprise.segment") != str(segment):
        return None
    return {stream: int(v) for stream, v in json.loads(meta["reprise.inputs"]).items()}

"""The ``direct`` exchange: each bucket's task reads the input files of a group of batches itself
and keeps its keys (no shuffle); a small run steps every bucket at once in the driver."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from engine.operator import SEQ, TIME, exact_pandas
from engine.ordering import in_order
from jobs.execution.bucketing import hash_buckets, hash_range, key_buckets
from jobs.execution.keyed_steps import batch_buckets, no_events, run_bucket
from jobs.execution.step_files import collect_files, count_row
from jobs.execution.step_plan import StepFiles, StepPlan
from jobs.storage import ARRIVAL_COLUMN, KEY_HASH_COLUMN, LAYOUT_COLUMNS, LAYOUT_KEY


def bucket_events(plan: StepPlan, bucket: int | None, buckets: int,
                  ranged: list[tuple[pa.Table, np.ndarray, np.ndarray]]) -> pd.DataFrame:
    """The events of one bucket (None: of every bucket) in the plan's arrival range, from the
    input files as :func:`range_events` read them (``ranged``).

    Keys are bucketed as the spark exchange buckets them (:func:`key_buckets`). A text key
    column is read dictionary-encoded (each distinct key is hashed once); it stays categorical
    for an operator that takes key codes or categorical keys and becomes plain values
    otherwise.
    """
    lo, key, tables = plan.batches[0][1], plan.op.key, []
    for table, seq, of in ranged:
        if bucket is not None:
            mine = of == bucket
            table, seq = table.filter(pa.array(mine)), seq[mine]
        times = table.column(plan.time_column).cast(pa.timestamp("us")).cast(pa.int64())
        tables.append(table.append_column(SEQ, pa.array(seq)).append_column(TIME, times))
    if not tables:
        return no_events(plan)
    # nanosecond timestamps, as the spark exchange's workers convert them too
    events = exact_pandas(pa.concat_tables(tables), coerce_temporal_nanoseconds=True)
    if plan.derive:
        events = plan.derive.add_to(
            events, lo, lambda table: key_buckets(table.column(key), buckets,
                                                  plan.modulo_buckets) == bucket
            if bucket is not None else np.ones(table.num_rows, bool))
    if isinstance(events[key].dtype, pd.CategoricalDtype) and not (
            plan.op.codes_keys or plan.op.categorical_keys):
        events[key] = events[key].to_numpy(dtype=object)
    return events


def range_events(plan: StepPlan, files: list[dict], buckets: int, bucket: int | None = None
                 ) -> tuple[list[tuple[pa.Table, np.ndarray, np.ndarray]], int]:
    """Each input file's events in the plan's arrival range: (rows, their arrival sequence,
    their bucket), and the input bytes read. ``bucket``: of a file in the key-hash layout
    (:mod:`jobs.recordings.layout`), only the row groups of that bucket's hash range are read
    (they hold other buckets' rows too); None: every row."""
    key = plan.op.key
    derived = plan.derive.names if plan.derive else ()
    columns = [c for c in plan.recording_columns if c not in derived]
    hashes = None if bucket is None or plan.modulo_buckets else hash_range(bucket, buckets)
    read = read_range(files, columns, [key], plan.batches[0][1], plan.batches[-1][2], key,
                      hashes)
    return [(r.table, r.seq, key_buckets(r.table.column(key), buckets, plan.modulo_buckets)
             if r.hashes is None else hash_buckets(r.hashes, buckets, plan.modulo_buckets))
            for r in read], sum(
        r.nbytes for r in read)


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
        fs, path = pa.fs.FileSystem.from_uri(f["uri"]) if "://" in f["uri"] else (
            pa.fs.LocalFileSystem(), f["uri"])
        with pq.ParquetFile(fs.open_input_file(path), read_dictionary=dictionary) as parquet:
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


def execute_direct(spark: SparkSession | None, plan: StepPlan, files: list[dict], buckets: int
                   ) -> dict[int, StepFiles]:
    """Run the plan's batches in one Spark job, one task per bucket reading its own events.

    No shuffle: each task reads the input files of the range with pyarrow and keeps its keys
    (every task reads the range once, which is cheap next to Spark's exchange on a few workers).
    ``spark`` None: the buckets run in this process, without a Spark job (for a few events, e.g.
    a small replay or a continuation's new commits, the job's fixed cost would dominate), and
    as one: the input files are read once, the operator (key by key) steps every bucket's keys
    at once; each batch writes one file per table, state included (a file of every bucket,
    which a later Spark job's tasks read per bucket).
    """
    if spark is None:  # the input read once; the buckets step as one (key by key, alike)
        ranged, nbytes = range_events(plan, files, buckets)
        by_bucket = batch_buckets(
            plan, np.concatenate([np.empty(0, "int64"), *(of for _, _, of in ranged)]),
            np.concatenate([np.empty(0, "int64"), *(seq for _, seq, _ in ranged)]), buckets)
        events = bucket_events(plan, None, buckets, ranged)
        return collect_files(plan, [read_row(plan, nbytes), *run_bucket(
            plan, 0, events, by_bucket=by_bucket).to_dict("records")])

    def step(bucket: int) -> pd.DataFrame:
        ranged, nbytes = range_events(plan, files, buckets, bucket)
        done = run_bucket(plan, bucket, bucket_events(plan, bucket, buckets, ranged))
        return pd.concat([done, pd.DataFrame([read_row(plan, nbytes)])], ignore_index=True)

    return collect_files(plan, per_task(spark, list(range(buckets)), step))


def read_row(plan: StepPlan, nbytes: int) -> dict:
    """The row a task reports of the input bytes it read (see :func:`collect_files`)."""
    return {**count_row(plan.batches[0][0], "read", -1, 0), "size": nbytes}


def execute_finish(spark: SparkSession | None, plan: StepPlan) -> dict[int, StepFiles]:
    """Run the operator's end-of-input flush on Spark, one task per bucket holding state."""
    empty = no_events(plan)
    return collect_files(plan, per_task(spark, sorted(plan.state_files),
                                          lambda bucket: run_bucket(plan, bucket, empty)))


def per_task(spark: SparkSession | None, buckets: list[int],
             work: Callable[[int], pd.DataFrame]) -> list[dict]:
    """``work(bucket)`` for every bucket (or part of a shared job), each in its own Spark task
    (one partition each, no shuffle, so the tasks run in parallel); the rows of all results.

    A plain RDD job: it starts its Python tasks sooner than a DataFrame ``mapInPandas`` job.
    """
    if not buckets:
        return []
    if spark is None:  # in the driver process (see jobs.runs.engine_choice)
        return [row for bucket in buckets for row in work(bucket).to_dict("records")]
    tasks = spark.sparkContext.parallelize(buckets, len(buckets))
    return tasks.flatMap(lambda bucket: work(bucket).to_dict("records")).collect()

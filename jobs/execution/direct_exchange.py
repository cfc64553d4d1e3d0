"""The ``direct`` exchange: each bucket's task reads the input files of a group of batches itself
and keeps its keys (no shuffle); a small run steps every bucket at once in the driver."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from engine.operator import SEQ, TIME, exact_pandas
from jobs.execution.bucketing import key_buckets
from jobs.execution.keyed_steps import batch_buckets, no_events, run_bucket
from jobs.execution.step_files import collect_files
from jobs.execution.step_plan import StepFiles, StepPlan


def bucket_events(plan: StepPlan, files: list[dict], bucket: int | None, buckets: int,
                  ranged: list[tuple[pa.Table, np.ndarray, np.ndarray]] | None = None
                  ) -> pd.DataFrame:
    """The events of one bucket (None: of every bucket) in the plan's arrival range, read
    straight from the input files (``ranged``: those files as :func:`range_events` read them,
    when already read).

    Keys are bucketed as the spark exchange buckets them (:func:`key_buckets`). A text key
    column is read dictionary-encoded (each distinct key is hashed once); it stays categorical
    for an operator that takes key codes or categorical keys and becomes plain values
    otherwise.
    """
    lo, key, tables = plan.batches[0][1], plan.op.key, []
    for table, seq, of in range_events(plan, files, buckets) if ranged is None else ranged:
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
            events, lo, lambda table: key_buckets(table.column(key), buckets) == bucket
            if bucket is not None else np.ones(table.num_rows, bool))
    if isinstance(events[key].dtype, pd.CategoricalDtype) and not (
            plan.op.codes_keys or plan.op.categorical_keys):
        events[key] = events[key].to_numpy(dtype=object)
    return events


def range_events(plan: StepPlan, files: list[dict], buckets: int
                 ) -> list[tuple[pa.Table, np.ndarray, np.ndarray]]:
    """Each input file's events in the plan's arrival range: (rows, their arrival sequence,
    their bucket), the files read once for every bucket."""
    key = plan.op.key
    derived = plan.derive.names if plan.derive else ()
    columns = [c for c in plan.recording_columns if c not in derived]
    out = []
    for table, seq in read_range(files, columns, [key] if key in columns else [],
                                 plan.batches[0][1], plan.batches[-1][2]):
        table = plan.derive.with_constants(table) if plan.derive else table
        out.append((table, seq, key_buckets(table.column(key), buckets)))
    return out


def read_range(files: list[dict], columns: Sequence[str], dictionary: list[str], lo: int,
               hi: int) -> list[tuple[pa.Table, np.ndarray]]:
    """Each input file's rows with arrival sequence in ``[lo, hi)`` (``columns``; those of
    ``dictionary`` read dictionary-encoded) and their arrival sequence."""
    out = []
    for f in files:
        fs, path = pa.fs.FileSystem.from_uri(f["uri"]) if "://" in f["uri"] else (
            pa.fs.LocalFileSystem(), f["uri"])
        table = pq.read_table(path, filesystem=fs, columns=list(columns),
                              read_dictionary=dictionary)
        seq = np.arange(f["offset"], f["offset"] + table.num_rows, dtype="int64")
        inside = (seq >= lo) & (seq < hi)
        if not inside.all():
            table, seq = table.filter(pa.array(inside)), seq[inside]
        out.append((table, seq))
    return out


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
        ranged = range_events(plan, files, buckets)
        by_bucket = batch_buckets(
            plan, np.concatenate([np.empty(0, "int64"), *(of for _, _, of in ranged)]),
            np.concatenate([np.empty(0, "int64"), *(seq for _, seq, _ in ranged)]), buckets)
        events = bucket_events(plan, files, None, buckets, ranged)
        return collect_files(plan, run_bucket(plan, 0, events, by_bucket=by_bucket
                                              ).to_dict("records"))

    def step(bucket: int) -> pd.DataFrame:
        return run_bucket(plan, bucket, bucket_events(plan, files, bucket, buckets))

    return collect_files(plan, per_task(spark, list(range(buckets)), step))


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

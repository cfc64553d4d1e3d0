"""The ``direct`` exchange: each bucket's task reads the input files of a group of batches itself
and keeps its keys (no shuffle); a small run steps every bucket at once in the driver."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import SparkSession

from engine.operator import SEQ, TIME, exact_pandas
from jobs.execution.bucketing import hash_buckets, hash_range, key_buckets
from jobs.execution.input_files import read_range
from jobs.execution.keyed_steps import batch_buckets, no_events, run_bucket
from jobs.execution.step_files import collect_files, count_row
from jobs.execution.step_plan import StepFiles, StepPlan


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
    read = read_range(files, columns, [key] if key in columns else [], plan.batches[0][1],
                      plan.batches[-1][2], key, hashes)
    out = []
    for r in read:
        table = plan.derive.with_constants(r.table) if plan.derive else r.table
        out.append((table, r.seq, key_buckets(table.column(key), buckets, plan.modulo_buckets)
                    if r.hashes is None else hash_buckets(r.hashes, buckets, plan.modulo_buckets)))
    return out, sum(r.nbytes for r in read)


def execute_direct(spark: SparkSession | None, plan: StepPlan, files: list[dict], buckets: int
                   ) -> dict[int, StepFiles]:
    """Run the plan's batches in one Spark job, one task per bucket reading its own events.

    No shuffle: each task reads the input files of the range with pyarrow and keeps its keys
    (of a file in the key-hash layout, only the row groups of its hash range: the tasks read
    the range once in all; a file without the layout, every task reads whole). Each task
    reports the input bytes it read (a ``read`` row: :attr:`StepFiles.bytes_read`).
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

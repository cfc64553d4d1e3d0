"""The ``direct`` exchange: each task reads the input files of a group of batches itself and keeps
the keys of its group of buckets (no shuffle); a small run steps every bucket at once in the
driver."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import SparkSession

from engine.operator import SEQ, TIME, exact_pandas
from jobs.execution.bucketing import bucket_groups, hash_buckets, hash_range, in_group, key_buckets
from jobs.execution.input_files import read_range
from jobs.execution.keyed_steps import batch_buckets, no_events, run_bucket
from jobs.execution.step_files import collect_files, count_row
from jobs.execution.step_plan import StepFiles, StepPlan

T = TypeVar("T")


def bucket_events(plan: StepPlan, group: range, buckets: int,
                  ranged: list[tuple[pa.Table, np.ndarray, np.ndarray]]) -> pd.DataFrame:
    """The events of the buckets ``group`` in the plan's arrival range, from the input files as
    :func:`range_events` read them (``ranged``).

    Keys are bucketed as the spark exchange buckets them (:func:`key_buckets`). A text key
    column is read dictionary-encoded (each distinct key is hashed once); it stays categorical
    for an operator that takes key codes or categorical keys and becomes plain values
    otherwise.
    """
    lo, key, tables = plan.batches[0][1], plan.op.key, []
    every = group == range(buckets)
    for table, seq, of in ranged:
        if not every:
            mine = in_group(of, group)
            table, seq = table.filter(pa.array(mine)), seq[mine]
        times = table.column(plan.time_column).cast(pa.timestamp("us")).cast(pa.int64())
        tables.append(table.append_column(SEQ, pa.array(seq)).append_column(TIME, times))
    if not tables:
        return no_events(plan)
    # nanosecond timestamps, as the spark exchange's workers convert them too
    events = exact_pandas(pa.concat_tables(tables), coerce_temporal_nanoseconds=True)
    if plan.derive:
        events = plan.derive.add_to(
            events, lo, lambda table: in_group(key_buckets(table.column(key), buckets,
                                                           plan.modulo_buckets), group))
    if isinstance(events[key].dtype, pd.CategoricalDtype) and not (
            plan.op.codes_keys or plan.op.categorical_keys):
        events[key] = events[key].to_numpy(dtype=object)
    return events


def range_events(plan: StepPlan, files: list[dict], buckets: int, group: range
                 ) -> tuple[list[tuple[pa.Table, np.ndarray, np.ndarray]], int]:
    """Each input file's events in the plan's arrival range: (rows, their arrival sequence,
    their bucket), and the input bytes read. Of a file in the key-hash layout
    (:mod:`jobs.recordings.layout`), only the row groups of the hash range of the buckets
    ``group`` are read (they hold other buckets' rows too); of other files, every row."""
    key = plan.op.key
    derived = plan.derive.names if plan.derive else ()
    columns = [c for c in plan.recording_columns if c not in derived]
    hashes = (None if group == range(buckets) or plan.modulo_buckets else
              (hash_range(group[0], buckets)[0], hash_range(group[-1], buckets)[1]))
    read = read_range(files, columns, [key] if key in columns else [], plan.batches[0][1],
                      plan.batches[-1][2], key, hashes)
    out = []
    for r in read:
        table = plan.derive.with_constants(r.table) if plan.derive else r.table
        out.append((table, r.seq, key_buckets(table.column(key), buckets, plan.modulo_buckets)
                    if r.hashes is None else hash_buckets(r.hashes, buckets, plan.modulo_buckets)))
    return out, sum(r.nbytes for r in read)


def step_group(plan: StepPlan, files: list[dict], buckets: int, group: range,
               emitted: Callable[[int, pa.Table | None], None] | None = None) -> pd.DataFrame:
    """One task of the direct exchange: read the events of the buckets ``group`` from the
    input ``files`` and step those buckets as one (:func:`run_bucket`); its file rows and the
    row of the input bytes it read. ``emitted``: as :func:`run_bucket`'s."""
    ranged, nbytes = range_events(plan, files, buckets, group)
    of = np.concatenate([np.empty(0, "int64"), *(of for _, _, of in ranged)])
    seq = np.concatenate([np.empty(0, "int64"), *(seq for _, seq, _ in ranged)])
    if group != range(buckets):
        mine = in_group(of, group)
        of, seq = of[mine], seq[mine]
    done = run_bucket(plan, group, bucket_events(plan, group, buckets, ranged),
                      by_bucket=batch_buckets(plan, of, seq, buckets), emitted=emitted)
    return pd.concat([done, pd.DataFrame([read_row(plan, nbytes)])], ignore_index=True)


def execute_direct(spark: SparkSession | None, plan: StepPlan, files: list[dict], buckets: int
                   ) -> dict[int, StepFiles]:
    """Run the plan's batches in one Spark job, one task per group of consecutive buckets
    (:func:`task_groups`), each reading its own events.

    No shuffle: each task reads the input files of the range with pyarrow and keeps its keys
    (of a file in the key-hash layout, only the row groups of its hash range: the tasks read
    the range once in all; a file without the layout, every task reads whole), steps its
    buckets as one (the operators are key by key) and writes one file per table and batch for
    them all, state included. Each task reports the input bytes it read (a ``read`` row:
    :attr:`StepFiles.bytes_read`). The bucket stays the unit of a run's state: a later job
    with other groups (another cluster size, the driver) reads each bucket's rows of those
    files. ``spark`` None: every bucket as one group in this process, without a Spark job
    (for a few events, e.g. a small replay or a continuation's new commits, the job's fixed
    cost would dominate).
    """
    return collect_files(plan, per_task(spark, task_groups(spark, buckets),
                                        lambda group: step_group(plan, files, buckets, group)))


def task_groups(spark: SparkSession | None, buckets: int) -> list[range]:
    """The groups of consecutive buckets that a job's tasks step, one group per core of the
    cluster (the session's default parallelism; a task's fixed cost and its files do not grow
    with the bucket count); ``spark`` None: every bucket as one."""
    if spark is None:
        return [range(buckets)]
    return bucket_groups(buckets, spark.sparkContext.defaultParallelism)


def read_row(plan: StepPlan, nbytes: int) -> dict:
    """The row a task reports of the input bytes it read (see :func:`collect_files`)."""
    return {**count_row(plan.batches[0][0], "read", -1, 0), "size": nbytes}


def execute_finish(spark: SparkSession | None, plan: StepPlan) -> dict[int, StepFiles]:
    """Run the operator's end-of-input flush on Spark, one task per group of buckets
    (:func:`task_groups`) holding state."""
    empty, none = no_events(plan), np.empty(0, "int64")
    idle = batch_buckets(plan, none, none, plan.buckets)
    groups = [g for g in task_groups(spark, plan.buckets)
              if any(b in plan.state_files for b in g)]
    return collect_files(plan, per_task(spark, groups, lambda group: run_bucket(
        plan, group, empty, by_bucket=idle)))


def per_task(spark: SparkSession | None, parts: list[T],
             work: Callable[[T], pd.DataFrame]) -> list[dict]:
    """``work(part)`` for every part (a group of buckets, or part of a shared job), each in its
    own Spark task (one partition each, no shuffle, so the tasks run in parallel); the rows of
    all results.

    A plain RDD job: it starts its Python tasks sooner than a DataFrame ``mapInPandas`` job.
    """
    if not parts:
        return []
    if spark is None:  # in the driver process (see jobs.runs.engine_choice)
        return [row for part in parts for row in work(part).to_dict("records")]
    tasks = spark.sparkContext.parallelize(parts, len(parts))
    return tasks.flatMap(lambda part: work(part).to_dict("records")).collect()

"""The ``spark`` exchange: Spark's shuffle brings each bucket's events of a group of batches
to one worker (as Arrow), which steps them (:func:`~jobs.execution.keyed_steps.run_bucket`)."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame

from engine.operator import exact_pandas
from jobs.execution.bucketing import BUCKET, bucketed
from jobs.execution.keyed_steps import no_events, run_bucket
from jobs.execution.step_files import FILES_SCHEMA, collect_files, files_table
from jobs.execution.step_plan import StepFiles, StepPlan


def execute_step(plan: StepPlan, events: DataFrame, buckets: int) -> dict[int, StepFiles]:
    """Run the plan's batches in one Spark job; returns what each batch wrote.

    The workers receive each bucket's events as Arrow (``applyInArrow``), so int columns that
    hold nulls reach the operator exact, as with the direct exchange (Spark's pandas conversion
    would make them float64). With the end-of-input flush in the plan, the events are cogrouped
    with one row per bucket, so that every bucket runs (also one without events in the range:
    its state is flushed).
    """

    def step(key: tuple[pa.Scalar, ...], table: pa.Table) -> pa.Table:
        return files_table(run_bucket(plan, key[0].as_py(), shuffled_events(plan, table)))

    def step_all(key: tuple[pa.Scalar, ...], table: pa.Table, _: pa.Table) -> pa.Table:
        if not table.num_rows:
            return files_table(run_bucket(plan, key[0].as_py(), no_events(plan)))
        return step(key, table)

    # one partition per bucket (not the session's shuffle partition count)
    grouped = (bucketed(events, plan.op.key, buckets, plan.modulo_buckets)
               .repartition(buckets, BUCKET).groupBy(BUCKET))
    if plan.finish:
        every = events.sparkSession.range(buckets).withColumnRenamed("id", BUCKET)
        job = grouped.cogroup(every.groupBy(BUCKET)).applyInArrow(step_all, FILES_SCHEMA)
    else:
        job = grouped.applyInArrow(step, FILES_SCHEMA)
    return collect_files(plan, job.collect())


def shuffled_events(plan: StepPlan, table: pa.Table) -> pd.DataFrame:
    """One bucket's events as Spark's exchange hands them (Arrow), as the frame the direct
    exchange builds (:func:`bucket_events`): ints with nulls nullable ``Int64``, nanosecond
    timestamps, a text key categorical for an operator that takes key codes or categorical
    keys."""
    table = table.drop_columns([BUCKET])
    key = plan.op.key
    i = table.schema.get_field_index(key)
    text = table.schema.field(i).type
    if (plan.op.codes_keys or plan.op.categorical_keys) and (
            pa.types.is_string(text) or pa.types.is_large_string(text)):
        table = table.set_column(i, key, table.column(i).dictionary_encode())
    return exact_pandas(table, coerce_temporal_nanoseconds=True)

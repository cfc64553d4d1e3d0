"""A run's reference computed on the executors, one key bucket per task.

For families whose reference is per key (:attr:`engine.family.QueryFamily.reference_per_key`),
the input is bucketed by key as the replay buckets it and each bucket's events go through the
family's reference in a Spark task; only the reference's rows and the arrival sequence numbers
of late, rejected and unplaceable events come back to the driver, never the input. Other
families (SPJ, whose reference is global) compute it on the driver.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from engine.family import Reference
from engine.operator import SEQ, TIME
from jobs.execution.bucketing import BUCKET, bucketed

RESULT_SCHEMA = ("events long, late array<long>, rejected array<long>, "
                 "unplaceable array<long>, output binary")
_EXACT = "__exact_"


@dataclass
class ReferenceResult:
    """The reference of a whole input: its rows, and arrival sequence numbers."""

    output: pd.DataFrame
    late: list[int]
    rejected: list[int]
    #: Events without key or event time (the runner quarantines them before the operator).
    unplaceable: list[int]
    #: Events the reference was given (the input less the unplaceable ones).
    events: int


def placeable(events: pd.DataFrame, key: str) -> tuple[pd.DataFrame, list[int]]:
    """``events`` in arrival order without the rows lacking key or event time (event time as
    int64), and the arrival sequence numbers of those rows."""
    events = events.sort_values(SEQ, kind="stable")
    unplaceable = events[SEQ][events[key].isna() | events[TIME].isna()]
    kept = events.drop(unplaceable.index)
    kept[TIME] = kept[TIME].astype("int64")
    return kept, [int(s) for s in unplaceable]


def _exact_from_text(events: pd.DataFrame, int_columns: tuple[str, ...]) -> pd.DataFrame:
    """The int columns that Arrow made float64 (they hold nulls) again as exact Int64, from
    their text companions; the companions dropped."""
    for column in int_columns:
        text = events.pop(_EXACT + column)
        if events[column].dtype.kind == "f":
            events[column] = pd.array([pd.NA if v is None else int(v) for v in text],
                                      dtype="Int64")
    return events


def _bucket_reference(reference: Reference, key: str, int_columns: tuple[str, ...],
                      events: pd.DataFrame) -> pd.DataFrame:
    """The executor side: one bucket's events -> one result row (see RESULT_SCHEMA)."""
    events = _exact_from_text(events.drop(columns=[BUCKET]), int_columns)
    kept, unplaceable = placeable(events, key)
    output, late, rejected = reference(kept)
    return pd.DataFrame({"events": [len(kept)], "late": [[int(s) for s in late]],
                         "rejected": [[int(s) for s in rejected]],
                         "unplaceable": [unplaceable],
                         "output": [pickle.dumps(output, protocol=pickle.HIGHEST_PROTOCOL)]})


def reference_by_bucket(frame: DataFrame, reference: Reference, key: str,
                        int_columns: tuple[str, ...], buckets: int) -> ReferenceResult:
    """``reference`` over ``frame`` (the sequenced input), one task per key bucket; the int
    columns of the input (``int_columns``) reach the reference exact, as on the driver."""
    with_text = frame.select("*", *(F.col(c).cast("string").alias(_EXACT + c)
                                   for c in int_columns))
    grouped = bucketed(with_text, key, buckets).repartition(buckets, BUCKET).groupBy(BUCKET)

    def task(events: pd.DataFrame) -> pd.DataFrame:
        return _bucket_reference(reference, key, int_columns, events)

    rows = grouped.applyInPandas(task, RESULT_SCHEMA).collect()
    empty = reference(placeable(frame.limit(0).toPandas(), key)[0])[0]
    outputs = [pickle.loads(r["output"]) for r in rows]
    output = pd.concat([o for o in outputs if len(o)], ignore_index=True) \
        if any(len(o) for o in outputs) else empty
    return ReferenceResult(output=output, late=[s for r in rows for s in r["late"]],
                           rejected=[s for r in rows for s in r["rejected"]],
                           unplaceable=[s for r in rows for s in r["unplaceable"]],
                           events=sum(r["events"] for r in rows))

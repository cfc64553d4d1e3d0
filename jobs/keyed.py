"""Spark execution of one step of a keyed engine operator.

State rows and batch events are hashed into buckets by key and cogrouped; each bucket's step runs
in a Python worker, which writes its output, late, quarantine and state rows as Parquet files
straight into the run's tables and returns only file descriptions. One Spark job per batch; the
driver never collects rows, it commits the listed files to Delta.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import TaskContext
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from engine.operator import REASON, SEQ, TIME, KeyedOperator, to_arrow

from .storage import StagedFile, file_stats

BUCKET = "__bucket"
FILES_SCHEMA = "kind string, path string, size long, rows long, stats string"
#: Table kinds a step writes, plus ``input`` (rows seen, for reconciliation).
KINDS = ("output", "late", "quarantine", "state")


@dataclass(frozen=True)
class StepPlan:
    """Everything a worker needs to run one batch (pickled into the UDF)."""

    op: KeyedOperator
    batch_id: int
    dirs: dict[str, str]  # kind -> directory for its Parquet files
    schemas: dict[str, pa.Schema]  # kind -> Arrow schema of its table
    recording_columns: tuple[str, ...]
    time_column: str
    finish: bool = False


def bucketed(df: DataFrame, key: str, buckets: int) -> DataFrame:
    """Add the bucket column (a stable hash of the key)."""
    return df.withColumn(BUCKET, F.pmod(F.xxhash64(F.col(key)), F.lit(buckets)))


def event_rows(events: pd.DataFrame, plan: StepPlan) -> pd.DataFrame:
    """Events as the late/quarantine tables store them: recording columns, arrival_seq, reason."""
    frame = events[list(plan.recording_columns)].copy()
    frame["arrival_seq"] = events[SEQ].to_numpy()
    frame[REASON] = events[REASON].to_numpy()
    return frame


def _write(plan: StepPlan, kind: str, frame: pd.DataFrame, bucket: int) -> dict | None:
    if frame.empty:
        return None
    table = to_arrow(frame, plan.schemas[kind])
    ctx = TaskContext.get()
    attempt = ctx.taskAttemptId() if ctx else 0
    path = f"{plan.dirs[kind]}/part-b{bucket:05d}-a{attempt}.parquet"
    pa.fs.LocalFileSystem().create_dir(plan.dirs[kind], recursive=True)
    pq.write_table(table, path)
    rows, stats = file_stats(path)
    return {"kind": kind, "path": path, "size": pa.fs.LocalFileSystem().get_file_info(path).size,
            "rows": rows, "stats": stats}


def _quarantine(events: pd.DataFrame, plan: StepPlan) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split off events the operator cannot place: no key or no event time."""
    key = plan.op.key
    no_key = events[key].isna().to_numpy()
    no_time = events[TIME].isna().to_numpy()
    bad = events[no_key | no_time].copy()
    bad[REASON] = [f"missing key column {key!r}" if k else f"missing time column "
                   f"{plan.time_column!r}" for k in no_key[no_key | no_time]]
    good = events[~(no_key | no_time)].copy()
    good[TIME] = good[TIME].astype("int64")
    return good, bad


def run_bucket(plan: StepPlan, state_pdf: pd.DataFrame, batch_pdf: pd.DataFrame) -> pd.DataFrame:
    """The worker side of a step for one bucket of keys."""
    frame = state_pdf if not state_pdf.empty else batch_pdf
    bucket = int(frame[BUCKET].iloc[0]) if not frame.empty else 0
    op = plan.op
    state = op.state_codec.decode(pa.Table.from_pandas(
        state_pdf.drop(columns=[BUCKET]), preserve_index=False)
        .select(op.state_codec.schema.names)) if not state_pdf.empty else op.init()
    files = [{"kind": "input", "path": "", "size": 0, "rows": len(batch_pdf), "stats": ""}]
    if plan.finish:
        written = [_write(plan, "output", op.finish(state).assign(batch=plan.batch_id), bucket)]
    else:
        good, bad = _quarantine(batch_pdf.drop(columns=[BUCKET]), plan)
        result = op.step(state, good)
        written = [
            _write(plan, "output", result.output.assign(batch=plan.batch_id), bucket),
            _write(plan, "late", event_rows(result.late, plan), bucket),
            _write(plan, "quarantine", event_rows(bad, plan), bucket),
            _write(plan, "state", result.state, bucket),
        ]
    files += [w for w in written if w is not None]
    return pd.DataFrame(files, columns=["kind", "path", "size", "rows", "stats"])


def execute_step(plan: StepPlan, state: DataFrame, events: DataFrame,
                 buckets: int) -> dict[str, list[StagedFile]]:
    """Run one batch on Spark; returns the staged files per kind (``input`` counts rows seen)."""
    key = plan.op.key

    def step(state_pdf: pd.DataFrame, batch_pdf: pd.DataFrame) -> pd.DataFrame:
        return run_bucket(plan, state_pdf, batch_pdf)

    left = bucketed(state, key, buckets).groupBy(BUCKET)
    right = bucketed(events, key, buckets).groupBy(BUCKET)
    rows = left.cogroup(right).applyInPandas(step, FILES_SCHEMA).collect()
    return _staged(rows)


def execute_finish(plan: StepPlan, state: DataFrame, buckets: int) -> dict[str, list[StagedFile]]:
    """Run the operator's end-of-input flush on Spark."""

    def finish(pdf: pd.DataFrame) -> pd.DataFrame:
        return run_bucket(plan, pdf, pdf.iloc[:0])

    rows = (bucketed(state, plan.op.key, buckets).groupBy(BUCKET)
            .applyInPandas(finish, FILES_SCHEMA).collect())
    return _staged(rows)


def _staged(rows: list) -> dict[str, list[StagedFile]]:
    out: dict[str, list[StagedFile]] = {kind: [] for kind in (*KINDS, "input")}
    for r in sorted(rows, key=lambda r: (r["kind"], r["path"])):
        out[r["kind"]].append(StagedFile(path=r["path"], size=r["size"], num_records=r["rows"],
                                         stats=r["stats"]))
    return out


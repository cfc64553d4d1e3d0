"""The arrival sequence of a recording: its snapshot's files in order, and events numbered.

Every event of a pinned recording version gets ``__seq``, its position in arrival order (files in
commit order, rows in file order), and ``__t``, its event time in microseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from engine import batch_plans as plans
from engine.catalog import reads_history
from engine.operator import SEQ, TIME
from engine.specs import BatchSpec
from jobs.execution.input_files import read_range
from jobs.storage import FILE_COLUMN, ROW_COLUMN, DeltaStorage


def input_index(storage: DeltaStorage, path: str, version: int) -> list[plans.InputFile]:
    """The snapshot's files in arrival order with the arrival sequence of their first row."""
    out, offset = [], 0
    for f in storage.files(path, version):
        rows = f.num_records
        if rows is None:
            rows = storage.file_rows(f.uri)
        out.append(plans.InputFile(uri=f.uri, commit_version=f.commit_version, rows=rows,
                                   offset=offset))
        offset += rows
    return out


def overlapping(index: list[dict], lo: int, hi: int) -> list[dict]:
    """The files of ``index`` holding events with arrival sequence in ``[lo, hi)``."""
    return [f for f in index if f["offset"] < hi and f["offset"] + f["rows"] > lo]


#: Catalog column types as Spark SQL types.
SPARK_TYPES = {"string": "string", "int": "bigint", "double": "double", "bool": "boolean",
               "timestamp": "timestamp"}


def sequenced(storage: DeltaStorage, path: str, version: int, index: list[dict], lo: int,
              hi: int, time_column: str, derived: Mapping[str, tuple[str, str]] | None = None
              ) -> DataFrame:
    """Input events with arrival sequence in ``[lo, hi)``, with ``__seq`` and ``__t``.

    ``index`` lists the snapshot's files as :class:`plans.InputFile` dicts; only the files that
    overlap ``[lo, hi)`` are read. ``derived`` adds the query's derived columns (name -> (Spark
    SQL expression, catalog type)); when one is a window expression they are computed over the
    whole pinned input, so that ``lag(x) over (partition by k order by __seq)`` sees every
    earlier event.
    """
    files = index if derived and reads_history(derived) else overlapping(index, lo, hi)
    df = storage.read_positioned(path, version, [f["uri"] for f in files])
    offsets = F.create_map(*[x for f in files for x in (F.lit(f["uri"]), F.lit(f["offset"]))]) \
        if files else F.create_map().cast("map<string,bigint>")
    seq = F.element_at(offsets, F.col(FILE_COLUMN)) + F.col(ROW_COLUMN)
    df = df.withColumn(SEQ, seq).drop(FILE_COLUMN, ROW_COLUMN)
    for name, (sql, typ) in (derived or {}).items():
        df = df.withColumn(name, F.expr(sql).cast(SPARK_TYPES[typ]))
    if any(f["offset"] < lo or f["offset"] + f["rows"] > hi for f in files):
        df = df.where((F.col(SEQ) >= lo) & (F.col(SEQ) < hi))  # a file straddles a cut
    return df.withColumn(TIME, F.unix_micros(F.col(time_column)))


def resolve_cuts(spec: BatchSpec, files: list[plans.InputFile], time_column: str) -> list[int]:
    """Cut points of a batch plan over the pinned input (``files``): see
    :func:`engine.batch_plans.resolve_cuts`; a plan by time reads the events' times."""
    return plans.resolve_cuts(spec, files, lambda: event_times(files, time_column))


def event_times(files: list[plans.InputFile], time_column: str) -> tuple[np.ndarray, np.ndarray]:
    """(event time in microseconds, arrival sequence) of the input's events that have a time,
    read with pyarrow (no Spark session needed: a small replay never starts one)."""
    times, seqs = [np.empty(0, "int64")], [np.empty(0, "int64")]
    total = sum(f.rows for f in files)
    for part in read_range([asdict(f) for f in files], [time_column], [], 0, total):
        column, seq = part.table.column(time_column), part.seq
        micros = column.cast(pa.timestamp("us", getattr(column.type, "tz", None))).cast(pa.int64())
        valid = micros.is_valid().to_numpy(zero_copy_only=False)
        times.append(micros.fill_null(0).to_numpy()[valid])
        seqs.append(seq[valid])
    return np.concatenate(times), np.concatenate(seqs)

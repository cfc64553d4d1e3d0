"""The arrival sequence of a recording: its snapshot's files in order, and events numbered.

Every event of a pinned recording version gets ``__seq``, its position in arrival order (files in
commit order, rows in file order), and ``__t``, its event time in microseconds.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from engine.catalog import reads_history
from engine.operator import SEQ, TIME
from jobs.runs import batch_plans as plans
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

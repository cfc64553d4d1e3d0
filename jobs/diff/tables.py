"""The output, late and quarantine tables of two runs compared bucket by bucket: what each
table's comparison found, its first differences and the first batch where the runs diverge."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import RepriseError
from engine.family import RowIdentity
from jobs.diff.buckets import Spill, bucket_count, row_hashes, scan
from jobs.diff.compare import Counts, Layout, compare_bucket, exact_frame
from jobs.diff.written import DifferenceTables, differences_schema
from jobs.storage import DeltaStorage

#: The tables of a run that are compared, in report order.
TABLES = ("output", "late", "quarantine")
#: Late and quarantined events are identified by their arrival sequence.
EVENT_IDENTITY = RowIdentity(columns=("arrival_seq",))


@dataclass(frozen=True)
class TableSide:
    """One run's table: where it is, and the arrival sequence at which each of the run's
    batches starts (its manifest's ``seq_lo``, with the batch ids)."""

    path: str
    batch_ids: np.ndarray
    batch_starts: np.ndarray


@dataclass
class TableDiff:
    """One table compared."""

    layout: Layout
    counts: Counts = field(default_factory=Counts)
    #: The first differences (by first batch, then identity), both sides side by side.
    shown: pd.DataFrame = field(default_factory=pd.DataFrame)
    first_batch: int | None = None


def layout_of(table: str, schemas: tuple[pa.Schema, pa.Schema], identity: RowIdentity
              ) -> Layout:
    """How ``table`` of two runs with these ``schemas`` is compared; ``identity``: the output
    rows' (late and quarantined events are identified by arrival)."""
    a, b = schemas
    shared = [n for n in a.names if n in b.names and n != "batch"]
    ident = identity if table == "output" else EVENT_IDENTITY
    floating = {c for c in shared if pa.types.is_floating(a.field(c).type)
                or pa.types.is_floating(b.field(c).type)}
    tolerant = tuple(c for c in shared if c in floating) if ident.columns is None else ()
    columns = (tuple(c for c in shared if c not in floating) if ident.columns is None
               else ident.columns)
    lacking = [c for c in (*columns, *ident.order) if c not in shared]
    if lacking:
        raise RepriseError(f"the {table} tables of the two runs do not both have the column(s) "
                           f"{', '.join(lacking)} that identify a row; diff compares two "
                           "queries of one family")
    values = tuple(c for c in shared if c not in columns and c not in tolerant)
    exact = frozenset(c for c in values if pa.types.is_integer(a.field(c).type)
                      and pa.types.is_integer(b.field(c).type))
    return Layout(table=table, identity=columns, order=ident.order, values=values, exact=exact,
                  tolerant=tolerant,
                  only_in_a=tuple(n for n in a.names if n not in b.names and n != "batch"),
                  only_in_b=tuple(n for n in b.names if n not in a.names and n != "batch"))


def read_schemas(layout: Layout, schemas: tuple[pa.Schema, pa.Schema]
                 ) -> tuple[pa.Schema, pa.Schema]:
    """The columns read of each side: identity (in A's types, so that equal values hash
    alike; its doubles as float64), values (each side's own types) and ``batch`` when the
    table has it."""
    a, b = schemas
    identity = [*(a.field(c) for c in layout.identity),
                *(pa.field(c, pa.float64()) for c in layout.tolerant)]
    return tuple(pa.schema([*identity, *(s.field(c) for c in layout.values),
                            *([s.field("batch")] if "batch" in s.names else [])])
                 for s in (a, b))  # type: ignore[return-value]


def batched(schema: pa.Schema) -> pa.Schema:
    """``schema`` with the ``batch`` column :func:`with_batch` adds."""
    return schema if "batch" in schema.names else schema.append(pa.field("batch", pa.int64()))


def with_batch(rows: pa.Table, side: TableSide) -> pa.Table:
    """``rows`` with the batch of each (events: the batch whose arrival range holds it)."""
    if "batch" in rows.column_names:
        return rows
    seq = rows.column("arrival_seq").to_numpy(zero_copy_only=False)
    at = np.searchsorted(side.batch_starts, seq, side="right") - 1
    return rows.append_column("batch", pa.array(side.batch_ids[np.maximum(at, 0)], pa.int64()))


def compare_table(storage: DeltaStorage, layout: Layout, sides: tuple[TableSide, TableSide],
                  schemas: tuple[pa.Schema, pa.Schema], limit: int,
                  written: DifferenceTables | None) -> TableDiff:
    """Compare one table of the two runs, one hash bucket of both sides at a time."""
    read = read_schemas(layout, schemas)
    rows = sum(f.rows for s in sides for f in storage.live_files(s.path))
    buckets = bucket_count(rows)
    result = TableDiff(layout)
    if written is not None:
        written.start(layout.table, differences_schema(layout, schemas))
    spill = Spill(buckets, (batched(read[0]), batched(read[1])))
    shown = None
    try:
        for i, side in enumerate(sides):
            for part in scan(storage, side.path, read[i]):
                part = with_batch(part, side)
                spill.add(i, part, row_hashes(part, list(layout.identity)))
        for bucket in range(buckets):
            found = compare_bucket(spill.rows(0, bucket), spill.rows(1, bucket), layout)
            result.counts.add(found.counts)
            if found.first_batch is not None:
                result.first_batch = (found.first_batch if result.first_batch is None
                                      else min(found.first_batch, result.first_batch))
            if written is not None:
                written.add(layout.table, found.differences)
            shown = first_rows(shown, found.differences, layout, limit)
    finally:
        spill.close()
    result.shown = exact_frame(shown)
    return result


def first_rows(shown: pa.Table | None, more: pa.Table, layout: Layout, limit: int
               ) -> pa.Table:
    """The first ``limit`` differences of ``shown`` and ``more``, by first batch then
    identity."""
    if shown is not None and (more.num_rows == 0 or limit <= 0):
        return shown
    both = more if shown is None else pa.concat_tables([shown, more])
    first = pc.min_element_wise(both.column("batch_a"), both.column("batch_b"))
    order = pc.sort_indices(both.append_column("__first", first),
                            [(c, "ascending") for c in ("__first", *layout.keys)],
                            null_placement="at_end")
    return both.take(order[:max(limit, 0)])

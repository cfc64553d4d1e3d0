"""Derived columns on the ``direct`` exchange: computed in each bucket's worker, per key.

A query's ``derive:`` expressions run in the bucket workers (:mod:`engine.derive`) when they are
all per-key expressions in arrival order; the run then keeps the ``direct`` exchange (no Spark
read, shuffle, window sort or Arrow transfer). The evaluator is a stateful step: a worker first
steps it over its bucket's events before the group's range (only the columns it reads), then over
the group's events, so every job sees the same values as one pass over the whole pinned input,
however the batches are grouped. Expressions outside what the evaluator supports keep the
``spark`` exchange, where Spark SQL computes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs  # pa.fs

from engine.derive import DerivedProgram, Unsupported, compile_derived, constant_value
from engine.errors import RepriseError
from engine.operator import SEQ, exact_pandas
from engine.specs import COLUMN_TYPES
from jobs.execution.input_files import read_range
from jobs.execution.key_codes import arrow_key_codes
from jobs.runs.run_context import RunContext


@dataclass(frozen=True)
class WorkerDerive:
    """The derived columns of a run as its workers compute them."""

    program: DerivedProgram
    #: The input files (``plans.InputFile`` dicts) from the first event on: a worker reads the
    #: events before its group's range from them.
    files: tuple[dict, ...]
    #: Constant columns (name -> (value, catalog type)), such as the key of ``key: none``: added
    #: to the input tables as they are read (:meth:`with_constants`), before the buckets.
    constants: Mapping[str, tuple[object, str]] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        return (*self.constants, *(name for name, _, _ in self.program.columns))

    def with_constants(self, table: pa.Table) -> pa.Table:
        """``table`` (input rows) with the constant columns."""
        return with_constants(table, self.constants)

    def add_to(self, events: pd.DataFrame, lo: int, mine: Callable[[pa.Table], np.ndarray]
               ) -> pd.DataFrame:
        """``events`` (one bucket's, arrival range from ``lo``, in arrival order) with the
        derived columns; ``mine(table)`` selects the bucket's rows of an input table."""
        state = self.program.init()
        # (only window functions need the events before the range)
        before = (self._before(lo, mine) if len(events) and self.program.windows
                  else pd.DataFrame())
        if len(before):
            _, state = self.program.step(state, before)
        derived, _ = self.program.step(state, events)
        out = events.copy(deep=False)  # the derived columns added, the others shared
        for name, column in derived.items():
            out[name] = column
        return out

    def _before(self, lo: int, mine: Callable[[pa.Table], np.ndarray]) -> pd.DataFrame:
        """The bucket's events before ``lo``: the columns the program reads and ``__seq``."""
        columns = [c for c in dict.fromkeys((self.program.key, *self.program.reads))
                   if c != SEQ and c not in self.constants]
        dictionary = [] if self.program.key in self.constants else [self.program.key]
        tables = []
        for part in read_range([f for f in self.files if f["offset"] < lo], columns, dictionary,
                               0, lo):
            table = self.with_constants(part.table)
            keep = mine(table)
            tables.append(table.filter(pa.array(keep)).append_column(
                SEQ, pa.array(part.seq[keep])))
        if not tables:
            return pd.DataFrame()
        return exact_pandas(pa.concat_tables(tables))


def with_constants(table: pa.Table, constants: Mapping[str, tuple[object, str]],
                   dictionary: bool = False) -> pa.Table:
    """``table`` with each constant column (name -> (value, catalog type)); ``dictionary``: a
    text constant dictionary-encoded (one value, a zero code per row), as a key column read
    dictionary-encoded, so that it reaches pandas as a categorical column."""
    for name, (value, declared) in constants.items():
        scalar = pa.scalar(value, COLUMN_TYPES[declared])
        if dictionary and pa.types.is_string(scalar.type):
            column = pa.DictionaryArray.from_arrays(
                pa.array(np.zeros(table.num_rows, "int32")), pa.array([value], scalar.type))
        else:  # (one value repeated in Arrow: a Python list of a million values takes a second)
            column = pa.repeat(scalar, table.num_rows)
        table = table.append_column(name, column)
    return table


def worker_derive(derived: Mapping[str, tuple[str, str]], columns: Mapping[str, str], key: str,
                  files: list[dict], check_order: bool = True) -> WorkerDerive | str:
    """The workers' evaluator of ``derived`` over the recording ``columns`` keyed by ``key``
    (a recording column or a constant one), or why the run needs Spark SQL for them.
    ``check_order``: read the pinned input to check the orders the program assumes (done once,
    when the run is prepared)."""
    constants = {name: value for name, (sql, declared) in derived.items()
                 if (value := constant_value(sql, declared)) is not None}
    if key not in columns and key not in constants:
        return f"the key {key!r} is itself derived"
    rest = {name: d for name, d in derived.items() if name not in constants}
    try:
        program = compile_derived(rest, {**columns, **{n: t for n, (_, t) in
                                                       constants.items()}}, key)
    except Unsupported as exc:
        return str(exc)
    if key in constants and program.windows:
        return f"a window function partitioned by the constant key {key!r}"
    for column in program.sorted_by if check_order else ():
        if problem := _out_of_order(files, key, column):
            return problem
    return WorkerDerive(program, tuple(files), constants)


def _out_of_order(files: list[dict], key: str, column: str) -> str | None:
    """Why ordering a key's events by ``column`` then arrival is not their arrival order (a
    null, or a value below an earlier one of the key), or None: then ``ORDER BY column, __seq``
    is ``ORDER BY __seq`` over the pinned input."""
    parts = [p.table for p in read_range(files, [key, column], [key], 0,
                                         sum(f["rows"] for f in files))]
    if not parts:
        return None
    table = pa.concat_tables(parts)
    values = table.column(column)
    if values.null_count:
        return f"{column} has nulls"
    if pa.types.is_timestamp(values.type):
        values = pc.cast(values, pa.int64())
    codes = _key_codes(table.column(key))
    order = np.argsort(codes, kind="stable")  # each key's events in arrival order
    v = values.to_numpy()[order]
    same_key = codes[order][1:] == codes[order][:-1]
    if (same_key & (v[1:] < v[:-1])).any():
        return f"some key's events do not arrive in {column} order"
    return None


def _key_codes(keys: pa.ChunkedArray) -> np.ndarray:
    """A number per value of a key column, equal for equal keys (nulls being one key; see
    :func:`~jobs.execution.key_codes.arrow_key_codes`), in the smallest integer type that holds
    them, so that the sort by code is a radix sort."""
    codes, distinct = arrow_key_codes(keys)
    return codes.astype(np.min_scalar_type(len(distinct) + 1))


def exchange_for(ctx: RunContext, requested: str, files: list[dict]) -> str:
    """The exchange of a new run: ``requested``, unless the query's derived columns need Spark
    SQL (then ``spark``)."""
    if not ctx.query.derived or requested != "direct":
        return requested
    found = worker_derive(ctx.query.derived, ctx.query.input_stream(ctx.recordings).columns,
                          ctx.key, files)
    return "direct" if isinstance(found, WorkerDerive) else "spark"


def in_workers(ctx: RunContext, files: list[dict]) -> WorkerDerive | None:
    """The derived columns of a ``direct`` run (None without any): its prepare checked that the
    workers can compute them."""
    if not ctx.query.derived:
        return None
    found = worker_derive(ctx.query.derived, ctx.query.input_stream(ctx.recordings).columns,
                          ctx.key, files, check_order=False)
    if isinstance(found, str):
        raise RepriseError(f"query {ctx.query.name!r}: its derived columns need Spark SQL "
                           f"({found}) but the run uses the direct exchange")
    return found

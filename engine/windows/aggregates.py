"""The aggregate functions of a window query: which partials each one reads and how it turns
the window's partial results into its output column (one class per kind of function), and the
:class:`Plan` that keeps each distinct partial once however many functions read it."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import pandas as pd
import pyarrow as pa

from .lists import Sketch, Values
from .monoids import Moments, Select, UdafPartial
from .partials import Count, Extreme, Partial, Sum
from .segments import Columns, Segments
from .spec import Aggregate, WindowSpec

#: State columns that belong to the window operators, not to a partial.
STRUCTURAL = ("window_start", "max_t")
#: An output column: numpy, or a nullable Int64 array for int outputs.
Output = np.ndarray | pd.arrays.IntegerArray


class OutOfRange(ArithmeticError):
    """The int result of ``aggregate`` for window ``window`` (an index into the windows being
    finished) is outside the int64 range."""

    def __init__(self, aggregate: str, window: int):
        super().__init__(aggregate, window)
        self.aggregate = aggregate
        self.window = window


class Function(ABC):
    """One output column of a window query."""

    def __init__(self, agg: Aggregate, spec: WindowSpec):
        self.agg = agg
        self.spec = spec
        self.column = agg.column or ""  # "" only for count()
        self.typ = spec.value_types.get(self.column, "")

    @abstractmethod
    def partials(self) -> list[Partial]:
        """The partials it reads."""

    @abstractmethod
    def output_type(self) -> pa.DataType:
        """Its Arrow output type."""

    @abstractmethod
    def finish(self, results: Columns) -> Output:
        """Its value for each window (NaN/None/NA for null) from the window results."""


class CountFn(Function):
    """``count()`` (events) and ``count(x)`` (non-null values)."""

    def partials(self) -> list[Partial]:
        return [Count(self.agg.column)]

    def output_type(self) -> pa.DataType:
        return pa.int64()

    def finish(self, results: Columns) -> np.ndarray:
        return results[Count(self.agg.column).name]


class SumFn(Function):
    """``sum`` (int64 for int columns) and ``avg``; null without values."""

    def partials(self) -> list[Partial]:
        return [Count(self.agg.column), Sum(self.column, self.typ)]

    def output_type(self) -> pa.DataType:
        return pa.int64() if self.agg.fn == "sum" and self.typ == "int" else pa.float64()

    def finish(self, results: Columns) -> Output:
        n = results[Count(self.agg.column).name]
        partial = Sum(self.column, self.typ)
        total = results[partial.name]
        wrapped = partial.out_of_range(results) if partial.exact else np.zeros(len(n), bool)
        if self.agg.fn == "avg":  # an int sum outside int64 averages its float64 sum
            mean_of = total.astype("float64")
            if partial.exact:
                mean_of = np.where(wrapped, results[partial.approx_key], mean_of)
            return np.where(n > 0, mean_of / np.maximum(n, 1), np.nan)
        if wrapped.any():
            raise OutOfRange(self.agg.name, int(np.flatnonzero(wrapped)[0]))
        if partial.exact:
            return pd.arrays.IntegerArray(total, n == 0)
        return np.where(n > 0, total, np.nan)


class ExtremeFn(Function):
    """``min`` and ``max`` (float64)."""

    def partials(self) -> list[Partial]:
        return [Extreme(self.column, self.agg.fn)]

    def output_type(self) -> pa.DataType:
        return pa.float64()

    def finish(self, results: Columns) -> np.ndarray:
        return results[Extreme(self.column, self.agg.fn).name]


class VarianceFn(Function):
    """``variance``/``stddev`` (sample: null below two values) and ``var_pop``/``stddev_pop``
    (null without values)."""

    def partials(self) -> list[Partial]:
        return [Moments(self.column)]

    def output_type(self) -> pa.DataType:
        return pa.float64()

    def finish(self, results: Columns) -> np.ndarray:
        name = Moments(self.column).name
        n, m2 = results[f"{name}_n"], results[f"{name}_m2"]
        ddof = 0 if self.agg.fn.endswith("_pop") else 1
        variance = np.where(n > ddof, np.maximum(m2, 0.0) / np.maximum(n - ddof, 1), np.nan)
        return np.sqrt(variance) if self.agg.fn.startswith("stddev") else variance


class SelectFn(Function):
    """``first``, ``last``, ``argmin``, ``argmax``: a value of the window's events."""

    def _partial(self) -> Select:
        by_typ = self.spec.value_types.get(self.agg.by or "", "double")
        return Select(self.agg.fn, self.column, self.typ, self.agg.by, by_typ)

    def partials(self) -> list[Partial]:
        return [self._partial()]

    def output_type(self) -> pa.DataType:
        return {"int": pa.int64(), "double": pa.float64(), "string": pa.string()}[self.typ]

    def finish(self, results: Columns) -> Output:
        partial = self._partial()
        if self.typ == "int":
            return pd.arrays.IntegerArray(results[partial.name], partial.empty_rows(results))
        return results[partial.name]


class DistinctFn(Function):
    """``count_distinct`` (exact, from the slices' values)."""

    def partials(self) -> list[Partial]:
        return [Values(self.column, self.typ)]

    def output_type(self) -> pa.DataType:
        return pa.int64()

    def finish(self, results: Columns) -> np.ndarray:
        return results[Values(self.column, self.typ).distinct_key]


class ApproxDistinctFn(Function):
    """``approx_count_distinct``: the HyperLogLog estimate, rounded (0 without values)."""

    def partials(self) -> list[Partial]:
        return [Sketch(self.column, self.typ)]

    def output_type(self) -> pa.DataType:
        return pa.int64()

    def finish(self, results: Columns) -> np.ndarray:
        return np.rint(results[Sketch(self.column, self.typ).estimate_key]
                       ).astype("int64")


class QuantileFn(Function):
    """``median`` and ``percentile(x, p)`` (exact, linear interpolation); null without
    values."""

    def _partial(self) -> Values:
        return Values(self.column, self.typ, frozenset([float(self.agg.p or 0.0)]))

    def partials(self) -> list[Partial]:
        return [self._partial()]

    def output_type(self) -> pa.DataType:
        return pa.float64()

    def finish(self, results: Columns) -> np.ndarray:
        return results[self._partial().quantile_key(float(self.agg.p or 0.0))]


class UdafFn(Function):
    """A user-declared aggregate: ``finish`` of the merged accumulator; null without values."""

    def __init__(self, agg: Aggregate, spec: WindowSpec):
        super().__init__(agg, spec)
        udaf = spec.udaf(agg.fn)
        assert udaf is not None
        self.partial = UdafPartial(udaf, agg.column or "")

    def partials(self) -> list[Partial]:
        return [Count(self.agg.column), self.partial]

    def output_type(self) -> pa.DataType:
        return pa.float64()

    def finish(self, results: Columns) -> np.ndarray:
        n = results[Count(self.agg.column).name]
        return np.where(n > 0, self.partial.finish(results), np.nan)


FUNCTIONS: dict[str, type[Function]] = {
    "count": CountFn, "sum": SumFn, "avg": SumFn, "min": ExtremeFn, "max": ExtremeFn,
    "stddev": VarianceFn, "variance": VarianceFn, "stddev_pop": VarianceFn, "var_pop": VarianceFn,
    "first": SelectFn, "last": SelectFn, "argmin": SelectFn, "argmax": SelectFn,
    "count_distinct": DistinctFn, "approx_count_distinct": ApproxDistinctFn,
    "median": QuantileFn, "percentile": QuantileFn}


def function(agg: Aggregate, spec: WindowSpec) -> Function:
    return FUNCTIONS.get(agg.fn, UdafFn)(agg, spec)


class Plan:
    """The functions of a query and the distinct partials they read (``rows`` always)."""

    def __init__(self, spec: WindowSpec):
        self.functions = [function(agg, spec) for agg in spec.aggregates]
        partials: dict[str, Partial] = {"rows": Count(None)}
        for fn in self.functions:
            for p in fn.partials():
                partials[p.name] = partials[p.name].union(p) if p.name in partials else p
        self.partials = list(partials.values())
        names = [c for p in self.partials for c in p.columns()]
        clash = sorted((set(names) & {*STRUCTURAL, spec.key})
                       | {n for n in names if names.count(n) > 1})
        if clash:
            raise ValueError(f"state column names clash: {', '.join(clash)} (rename the key "
                             "column or choose other aggregated columns)")

    def fields(self) -> list[pa.Field]:
        return [f for p in self.partials for f in p.fields()]

    def output_fields(self) -> list[pa.Field]:
        return [pa.field(fn.agg.name, fn.output_type()) for fn in self.functions]

    def columns(self) -> list[str]:
        return [f.name for f in self.fields()]

    def empty(self, n: int) -> Columns:
        return {k: v for p in self.partials for k, v in p.empty(n).items()}

    def of_events(self, events: pd.DataFrame, seg: Segments) -> Columns:
        return {k: v for p in self.partials for k, v in p.of_events(events, seg).items()}

    def merge(self, parts: Columns, seg: Segments) -> Columns:
        if seg.singletons():
            return {c: parts[c][seg.order] for c in self.columns()}
        return {k: v for p in self.partials for k, v in p.merge(parts, seg).items()}

    def window(self, parts: Columns, cells: np.ndarray, total: int, pos: np.ndarray,
               width: int) -> Columns:
        return {k: v for p in self.partials
                for k, v in p.window(parts, cells, total, pos, width).items()}

    def finish(self, results: Columns) -> dict[str, Output]:
        """Each output column; raises :class:`OutOfRange` for an int sum outside int64."""
        return {fn.agg.name: fn.finish(results) for fn in self.functions}

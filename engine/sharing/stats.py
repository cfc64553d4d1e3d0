"""Statistics of a recording the cost model reads: its row count, and a sample of its rows from
which predicate selectivities, the number of keys and the time span are estimated."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..predicate import TRUE, Pred

#: Selectivity assumed for a predicate other than TRUE when there is no sample.
DEFAULT_SELECTIVITY = 1 / 3


@dataclass(eq=False)
class Statistics:
    """``rows``: the recording's row count; ``sample``: some of its rows (any columns the
    predicates read; None: no sample); ``keys`` and ``span`` (time span in microseconds) per
    key column and time column, estimated from the sample when not given."""

    rows: int
    sample: pd.DataFrame | None = None
    keys: dict[str, int] = field(default_factory=dict)
    span_us: dict[str, int] = field(default_factory=dict)
    _cache: dict[Pred, float] = field(default_factory=dict, repr=False)
    #: Clusters built for these statistics, by members and W (see ``cluster.build_cluster``).
    clusters: dict = field(default_factory=dict, repr=False)
    #: Residual predicates found for these statistics' plans, by (predicate, W).
    residuals: dict = field(default_factory=dict, repr=False)

    def selectivity(self, pred: Pred) -> float:
        """The estimated fraction of rows passing ``pred``: (matches + 0.5) / (n + 1) on the
        sample (never 0 or 1, so that a small sample does not rule anything out), 1 for TRUE,
        :data:`DEFAULT_SELECTIVITY` without a sample or when ``pred`` reads a column the sample
        lacks (a derived column)."""
        if pred == TRUE:
            return 1.0
        if pred not in self._cache:
            if (self.sample is None or len(self.sample) == 0
                    or not pred.columns <= set(self.sample.columns)):  # (a derived column)
                self._cache[pred] = DEFAULT_SELECTIVITY
            else:
                hits = int(pred.evaluate(self.sample).sum())
                self._cache[pred] = (hits + 0.5) / (len(self.sample) + 1)
        return self._cache[pred]

    def key_count(self, key: str | None) -> int:
        """Distinct values of ``key`` (1 for a global window)."""
        if key is None:
            return 1
        if key not in self.keys:
            sample = self.sample
            seen = sample[key].nunique() if sample is not None and key in sample else 1
            self.keys[key] = max(1, int(seen))
        return self.keys[key]

    def span(self, time: str) -> int:
        """The recording's event-time span in microseconds (at least 1)."""
        if time not in self.span_us:
            sample = self.sample
            if sample is None or time not in sample or sample[time].notna().sum() == 0:
                self.span_us[time] = 1
            else:
                column = sample[time].dropna()
                if not pd.api.types.is_integer_dtype(column.dtype):
                    column = pd.to_datetime(column, utc=True, cache=False).dt.as_unit("us").astype(
                        "int64")
                self.span_us[time] = max(1, int(column.max() - column.min()))
        return self.span_us[time]

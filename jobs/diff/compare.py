"""One bucket of one table of two runs compared: rows only in A, only in B, changed (same
identity, a value differs: integers exactly, doubles beyond the tolerance of
:func:`jobs.runs.validate.same_values`) or equal."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from jobs.runs.validate import same_values

#: The number of a row among the rows of its identity group (see
#: :class:`engine.family.RowIdentity`).
EMISSION = "emission"
#: The column of the differences that says which kind each is.
DIFFERENCE = "difference"
#: The column listing the columns a changed row changed in.
CHANGED_COLUMNS = "changed_columns"
KINDS = ("only_a", "only_b", "changed")
#: Pandas types that keep every value exact, nulls included (an int64 with a null would be
#: float64, which is not exact above 2^53).
_EXACT_TYPES = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(),
                pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(),
                pa.bool_(): pd.BooleanDtype()}


@dataclass(frozen=True)
class Layout:
    """How one table of the two runs is compared: the identity group columns, the order that
    numbers the rows of a group, the value columns both sides have, and which are integers on
    both sides (compared exactly)."""

    table: str
    identity: tuple[str, ...]
    order: tuple[str, ...]
    values: tuple[str, ...]
    exact: frozenset[str]
    #: Columns only one side has (not compared).
    only_in_a: tuple[str, ...] = ()
    only_in_b: tuple[str, ...] = ()

    @property
    def keys(self) -> list[str]:
        """The columns that identify a row: the group and the row's number in it."""
        return [*self.identity, EMISSION]


@dataclass
class Counts:
    """What one table's comparison found."""

    only_a: int = 0
    only_b: int = 0
    changed: int = 0
    equal: int = 0
    #: Equal rows committed in different batches.
    moved: int = 0
    #: Changed rows per column that changed in them.
    changed_columns: dict[str, int] = field(default_factory=dict)

    def add(self, other: Counts) -> None:
        """Add ``other``'s counts to these."""
        for name in ("only_a", "only_b", "changed", "equal", "moved"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for column, n in other.changed_columns.items():
            self.changed_columns[column] = self.changed_columns.get(column, 0) + n

    @property
    def different(self) -> bool:
        return bool(self.only_a or self.only_b or self.changed)


@dataclass
class BucketResult:
    """One bucket compared: its counts, its differences (one row each, both sides' values side
    by side) and the first batch where its rows differ (None: nowhere)."""

    counts: Counts
    differences: pd.DataFrame
    first_batch: int | None


def exact_frame(table: pa.Table) -> pd.DataFrame:
    """``table`` as pandas with integers and booleans nullable (exact through an outer join)."""
    return table.to_pandas(types_mapper=_EXACT_TYPES.get)


def numbered(frame: pd.DataFrame, layout: Layout) -> pd.DataFrame:
    """``frame`` with each row's :data:`EMISSION`: its number among the rows of its identity
    group, in the order of the layout's ``order`` then of its batch."""
    frame = frame.sort_values([*layout.order, "batch"], kind="stable") \
        if len(frame) else frame
    numbers = (frame.groupby(list(layout.identity), dropna=False, sort=False).cumcount()
               if layout.identity else pd.Series(np.arange(len(frame)), index=frame.index))
    return frame.assign(**{EMISSION: numbers.to_numpy(dtype="int64")})


def compare_bucket(a: pa.Table, b: pa.Table, layout: Layout) -> BucketResult:
    """Compare the rows of a bucket of each side (tables with the identity, value and ``batch``
    columns of ``layout``)."""
    keys = layout.keys
    merged = numbered(exact_frame(a), layout).merge(
        numbered(exact_frame(b), layout), on=keys, how="outer", suffixes=("_a", "_b"),
        indicator=True, sort=False)
    side = merged.pop("_merge").to_numpy()
    both = side == "both"
    differs = {c: both & ~same_values(merged[f"{c}_a"], merged[f"{c}_b"], c in layout.exact)
               for c in layout.values}
    changed = (np.logical_or.reduce(list(differs.values())) if differs
               else np.zeros(len(merged), dtype=bool))
    batch_a, batch_b = (merged[f"batch_{s}"].to_numpy(dtype="float64", na_value=np.nan)
                        for s in "ab")
    moved = both & ~changed & (batch_a != batch_b)
    kind = np.select([side == "left_only", side == "right_only", changed],
                     list(KINDS), default="")
    counts = Counts(only_a=int((side == "left_only").sum()),
                    only_b=int((side == "right_only").sum()), changed=int(changed.sum()),
                    equal=int((both & ~changed).sum()), moved=int(moved.sum()),
                    changed_columns={c: int(d.sum()) for c, d in differs.items() if d.any()})
    diverging = (kind != "") | moved
    first = np.fmin(batch_a, batch_b)[diverging]
    first_batch = int(first.min()) if len(first) else None
    rows = kind != ""
    differences = merged[rows]
    names = np.array(list(differs))
    columns_changed = [",".join(names[list(flags)]) for flags in
                       zip(*(d[rows] for d in differs.values()), strict=True)] \
        if differs else [""] * int(rows.sum())
    differences = differences.assign(**{DIFFERENCE: kind[rows],
                                        CHANGED_COLUMNS: columns_changed})
    ordered = [DIFFERENCE, *keys, "batch_a", "batch_b",
               *(f"{c}_{s}" for c in layout.values for s in "ab"), CHANGED_COLUMNS]
    return BucketResult(counts, differences[ordered].reset_index(drop=True), first_batch)

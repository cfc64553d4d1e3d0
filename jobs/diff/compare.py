"""One bucket of one table of two runs compared: rows only in A, only in B, changed (same
identity, a value differs: integers exactly, doubles beyond the tolerance of
:func:`jobs.runs.validate.same_arrays`) or equal."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from jobs.diff.buckets import ROW_HASH
from jobs.runs.validate import same_arrays

#: The number of a row among the rows of its identity group (see
#: :class:`engine.family.RowIdentity`).
EMISSION = "emission"
#: The column of the differences that says which kind each is.
DIFFERENCE = "difference"
#: The column listing the columns a changed row changed in.
CHANGED_COLUMNS = "changed_columns"
#: The kinds of difference, as :class:`Counts` names them.
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


def matched(ids_a: np.ndarray, ids_b: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The rows of each side whose ids are equal, as pairs of positions (A's, B's); None when
    two rows of one side have one id."""
    oa, ob = np.argsort(ids_a), np.argsort(ids_b)
    sa, sb = ids_a[oa], ids_b[ob]
    if (sa[1:] == sa[:-1]).any() or (sb[1:] == sb[:-1]).any():
        return None
    if not len(sb):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    at = np.minimum(np.searchsorted(sb, sa), len(sb) - 1)
    hit = sb[at] == sa
    return oa[hit], ob[at[hit]]


def same_identities(a: pa.Table, b: pa.Table, ia: np.ndarray, ib: np.ndarray,
                    columns: tuple[str, ...]) -> bool:
    """Rows ``ia`` of ``a`` have the values of rows ``ib`` of ``b`` in ``columns`` (nulls
    equal)."""
    for c in columns:
        x, y = a.column(c).take(pa.array(ia)), b.column(c).take(pa.array(ib))
        same = pc.or_kleene(pc.equal(x, y), pc.and_(pc.is_null(x), pc.is_null(y)))
        if not pc.all(same.fill_null(False)).as_py():
            return False
    return True


def pairs(a: pa.Table, b: pa.Table, layout: Layout
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of A and B with equal identities, as pairs of positions, and each row's
    emission (A's rows first). Rows that need no numbering (no ``order``, no two rows of a side
    with one identity) pair by their identity hashes (:data:`ROW_HASH`), checked for equal
    identities; others by :func:`row_ids`."""
    if not layout.order:
        found = matched(np.asarray(a.column(ROW_HASH)), np.asarray(b.column(ROW_HASH)))
        if found is not None and same_identities(a, b, *found, layout.identity):
            return *found, np.zeros(a.num_rows + b.num_rows, dtype=np.int64)
    columns = list(dict.fromkeys([*layout.identity, *layout.order, "batch"]))
    ids_a, ids_b, emission = row_ids(exact_frame(a.select(columns)),
                                     exact_frame(b.select(columns)), layout)
    found = matched(ids_a, ids_b)
    assert found is not None  # (an identity and its emission are one row's)
    return *found, emission


def row_ids(a: pd.DataFrame, b: pd.DataFrame, layout: Layout
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An id for each row of each side, equal on the two sides exactly when the rows' identities
    are (their identity group, nulls equal to nulls, and their emission: their number among
    the rows of their group, in the order of the layout's ``order`` then of their batch); and
    the emission of the rows of both sides (A's rows first)."""
    rows = len(a) + len(b)
    group, groups = np.zeros(rows, dtype=np.int64), 1
    for c in layout.identity:
        codes, uniques = pd.factorize(pd.concat([a[c], b[c]], ignore_index=True),
                                      use_na_sentinel=False)
        group, found = pd.factorize(group * len(uniques) + codes)
        group, groups = group.astype(np.int64), len(found)
    side = np.repeat(np.array([0, 1], dtype=np.int64), [len(a), len(b)])
    emission = np.zeros(rows, dtype=np.int64)
    shared = np.bincount(group * 2 + side, minlength=2 * groups).max(initial=0) > 1
    if layout.order or shared:  # rows of one side share an identity: number them
        ordering = pd.DataFrame({"side": side, "group": group, **{
            c: pd.concat([a[c], b[c]], ignore_index=True) for c in (*layout.order, "batch")}})
        order = ordering.sort_values(list(ordering.columns), kind="stable").index.to_numpy()
        key = (group * 2 + side)[order]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        place = np.arange(rows) - np.repeat(starts, np.diff(np.r_[starts, rows]))
        emission[order] = place
    ids = group * (int(emission.max(initial=0)) + 1) + emission
    return ids[:len(a)], ids[len(a):], emission


def side_by_side(kind: str, layout: Layout, a: pd.DataFrame | None, b: pd.DataFrame | None,
                 emission: np.ndarray, changed_columns: list[str]) -> pd.DataFrame:
    """Differences of one kind: the rows ``a`` and ``b`` (either may be None: the row is only in
    the other side), aligned, both sides' values side by side."""
    one = a if a is not None else b
    assert one is not None
    one = one.reset_index(drop=True)
    n = len(one)

    def column(frame: pd.DataFrame | None, name: str) -> pd.Series:
        if frame is None:  # nulls of the other side's type
            return one[name].iloc[:0].reindex(pd.RangeIndex(n))
        return frame[name].reset_index(drop=True)

    columns: dict[str, object] = {DIFFERENCE: np.full(n, kind, dtype=object)}
    for c in layout.identity:
        columns[c] = one[c]
    columns[EMISSION] = emission
    for s, frame in (("a", a), ("b", b)):
        columns[f"batch_{s}"] = column(frame, "batch")
    for c in layout.values:
        for s, frame in (("a", a), ("b", b)):
            columns[f"{c}_{s}"] = column(frame, c)
    columns[CHANGED_COLUMNS] = changed_columns
    return pd.DataFrame(columns)


def compare_bucket(a: pa.Table, b: pa.Table, layout: Layout) -> BucketResult:
    """Compare the rows of a bucket of each side (tables with the identity, value, ``batch``
    and :data:`ROW_HASH` columns of ``layout``): rows are paired by identity (:func:`pairs`),
    paired rows compared column by column."""
    ia, ib, emission = pairs(a, b, layout)
    take_a, take_b = pa.array(ia, pa.int64()), pa.array(ib, pa.int64())
    differs = {c: ~same_arrays(a.column(c).take(take_a), b.column(c).take(take_b),
                               c in layout.exact) for c in layout.values}
    changed = (np.logical_or.reduce(list(differs.values())) if differs
               else np.zeros(len(ia), dtype=bool))
    only_a, only_b = np.ones(a.num_rows, dtype=bool), np.ones(b.num_rows, dtype=bool)
    only_a[ia], only_b[ib] = False, False
    batches = [np.asarray(t.column("batch"), dtype="float64") for t in (a, b)]
    moved = ~changed & (batches[0][ia] != batches[1][ib])
    counts = Counts(only_a=int(only_a.sum()), only_b=int(only_b.sum()),
                    changed=int(changed.sum()), equal=int((~changed).sum()),
                    moved=int(moved.sum()),
                    changed_columns={c: int(d.sum()) for c, d in differs.items() if d.any()})
    firsts = np.concatenate([batches[0][only_a], batches[1][only_b],
                             np.fmin(batches[0][ia], batches[1][ib])[changed | moved]])
    first_batch = int(firsts.min()) if len(firsts) else None
    names = np.array(list(differs))
    changed_names = [",".join(names[list(flags)]) for flags in
                     zip(*(d[changed] for d in differs.values()), strict=True)]
    rows_a, rows_b = np.flatnonzero(only_a), np.flatnonzero(only_b)
    parts = [side_by_side("only_a", layout, exact_frame(a.take(rows_a)), None,
                          emission[:a.num_rows][rows_a], [""] * len(rows_a)),
             side_by_side("only_b", layout, None, exact_frame(b.take(rows_b)),
                          emission[a.num_rows:][rows_b], [""] * len(rows_b)),
             side_by_side("changed", layout, exact_frame(a.take(take_a.filter(changed))),
                          exact_frame(b.take(take_b.filter(changed))),
                          emission[:a.num_rows][ia][changed], changed_names)]
    differences = pd.concat([p for p in parts if len(p)] or parts[:1], ignore_index=True)
    return BucketResult(counts, differences, first_batch)

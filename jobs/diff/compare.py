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
from jobs.diff.multiset import floats, pairs_within_tolerance
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
    #: Doubles that are part of the identity, equal within the tolerance (a multiset of rows:
    #: :mod:`jobs.diff.multiset`).
    tolerant: tuple[str, ...] = ()
    #: Columns only one side has (not compared).
    only_in_a: tuple[str, ...] = ()
    only_in_b: tuple[str, ...] = ()

    @property
    def keys(self) -> list[str]:
        """The columns that identify a row: the group and the row's number in it."""
        return [*self.identity, *self.tolerant, EMISSION]


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
    differences: pa.Table
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
        same = pc.equal(x, y)
        if x.null_count or y.null_count:
            same = pc.or_kleene(same, pc.and_(pc.is_null(x), pc.is_null(y)))
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


def identity_groups(a: pd.DataFrame, b: pd.DataFrame, columns: tuple[str, ...]
                    ) -> tuple[np.ndarray, int]:
    """The group of each row of both sides (A's rows first), equal for rows with equal values
    of ``columns`` (nulls equal to nulls), and the number of groups."""
    group, groups = np.zeros(len(a) + len(b), dtype=np.int64), 1
    for c in columns:
        codes, uniques = pd.factorize(pd.concat([a[c], b[c]], ignore_index=True),
                                      use_na_sentinel=False)
        group, found = pd.factorize(group * len(uniques) + codes)
        group, groups = group.astype(np.int64), len(found)
    return group, groups


def tolerant_pairs(a: pa.Table, b: pa.Table, layout: Layout
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`pairs` of rows whose identity holds doubles (:attr:`Layout.tolerant`): grouped by
    the other identity columns, paired within a group by
    :func:`jobs.diff.multiset.pairs_within_tolerance`."""
    columns = list(layout.identity)
    group, _ = identity_groups(exact_frame(a.select(columns)), exact_frame(b.select(columns)),
                               layout.identity)
    return pairs_within_tolerance(
        (group[:a.num_rows], group[a.num_rows:]),
        tuple([floats(t.column(c)) for c in layout.tolerant] for t in (a, b)),  # type: ignore
        tuple(np.asarray(t.column("batch").fill_null(-1), dtype=np.int64) for t in (a, b)))


def row_ids(a: pd.DataFrame, b: pd.DataFrame, layout: Layout
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An id for each row of each side, equal on the two sides exactly when the rows' identities
    are (their identity group, nulls equal to nulls, and their emission: their number among
    the rows of their group, in the order of the layout's ``order`` then of their batch); and
    the emission of the rows of both sides (A's rows first)."""
    rows = len(a) + len(b)
    group, groups = identity_groups(a, b, layout.identity)
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


def changed_names(differs: dict[str, np.ndarray], changed: np.ndarray) -> pa.Array:
    """For each changed row, the names of the columns it changed in, joined by commas."""
    names = list(differs)
    codes = np.zeros(int(changed.sum()), dtype=np.int64)
    for bit, flags in enumerate(differs.values()):
        codes |= flags[changed].astype(np.int64) << bit
    found, at = np.unique(codes, return_inverse=True)
    labels = [",".join(n for bit, n in enumerate(names) if int(code) >> bit & 1)
              for code in found]
    return pa.array(np.array(labels, dtype=object)[at] if len(codes) else [], pa.string())


def side_by_side(a: pa.Table, b: pa.Table, layout: Layout, rows_a: np.ndarray,
                 rows_b: np.ndarray, emission: np.ndarray, changed: pa.Array) -> pa.Table:
    """The differences of one bucket as one table: rows ``rows_a`` of A (only in A), rows
    ``rows_b`` of B (only in B), then the changed pairs (``changed``: their pairs and the
    columns they changed in), the identity, both batches and both sides' values side by side;
    ``emission``: each difference's."""
    ia, ib, names = changed
    n_a, n_b, n_c = len(rows_a), len(rows_b), len(ia)
    nulls = np.full(n_b, -1), np.full(n_a, -1)
    take_a = np.concatenate([rows_a, nulls[0], ia])
    take_b = np.concatenate([nulls[1], rows_b, ib])
    index_a = pa.array(take_a, pa.int64(), mask=take_a < 0)
    index_b = pa.array(take_b, pa.int64(), mask=take_b < 0)
    columns: dict[str, pa.Array | pa.ChunkedArray] = {
        DIFFERENCE: pa.array(np.repeat(np.array(KINDS, dtype=object), [n_a, n_b, n_c]),
                             pa.string())}
    for c in layout.keys[:-1]:
        columns[c] = pa.chunked_array([a.column(c).take(rows_a), b.column(c).take(rows_b),
                                       a.column(c).take(ia)], a.schema.field(c).type)
    columns[EMISSION] = pa.array(emission, pa.int64())
    for s, side, index in (("a", a, index_a), ("b", b, index_b)):
        columns[f"batch_{s}"] = side.column("batch").take(index).cast(pa.int64())
    for c in layout.values:
        for s, side, index in (("a", a, index_a), ("b", b, index_b)):
            columns[f"{c}_{s}"] = side.column(c).take(index)
    columns[CHANGED_COLUMNS] = pa.chunked_array(
        [pa.array([""] * (n_a + n_b), pa.string()), names], pa.string())
    return pa.table(columns)


def compare_bucket(a: pa.Table, b: pa.Table, layout: Layout) -> BucketResult:
    """Compare the rows of a bucket of each side (tables with the identity, value, ``batch``
    and :data:`ROW_HASH` columns of ``layout``): rows are paired by identity (:func:`pairs`;
    doubles of the identity within the tolerance: :func:`jobs.diff.multiset.tolerant_pairs`),
    paired rows compared column by column."""
    ia, ib, emission = (tolerant_pairs(a, b, layout) if layout.tolerant
                        else pairs(a, b, layout))
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
    rows_a, rows_b = np.flatnonzero(only_a), np.flatnonzero(only_b)
    emissions = np.concatenate([emission[:a.num_rows][rows_a], emission[a.num_rows:][rows_b],
                                emission[:a.num_rows][ia[changed]]])
    differences = side_by_side(a, b, layout, rows_a, rows_b, emissions,
                               (ia[changed], ib[changed], changed_names(differs, changed)))
    return BucketResult(counts, differences, first_batch)

"""spj outputs compared as multisets of rows whose doubles are equal within the tolerance: the
pairing of :mod:`jobs.diff.multiset` through a bucket's comparison, checked against a maximum
matching computed independently."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.family import RowIdentity
from jobs.diff.buckets import ROW_HASH, row_hashes
from jobs.diff.compare import compare_bucket
from jobs.diff.tables import layout_of, read_schemas

MULTISET = RowIdentity(columns=None)
SCHEMA = pa.schema([("k", pa.int64()), ("x", pa.float64()), ("y", pa.float64()),
                    ("batch", pa.int64())])


def close(p: float | None, q: float | None) -> bool:
    if p is None or q is None:
        return p is None and q is None
    return math.isclose(p, q, rel_tol=1e-9, abs_tol=1e-9)


def side(rows: list[tuple]) -> pa.Table:
    """Rows (k, x, y, batch) as a bucket of one side, with their identity hashes."""
    columns = list(zip(*rows, strict=True)) if rows else [[]] * 4
    table = pa.table([pa.array(list(c), f.type) for c, f in zip(columns, SCHEMA, strict=True)],
                     schema=SCHEMA)
    layout = layout_of("output", (SCHEMA, SCHEMA), MULTISET)
    table = table.select(read_schemas(layout, (SCHEMA, SCHEMA))[0].names)
    return table.append_column(ROW_HASH, pa.array(row_hashes(table, list(layout.identity)),
                                                  pa.uint64()))


def compared(a: list[tuple], b: list[tuple]):
    layout = layout_of("output", (SCHEMA, SCHEMA), MULTISET)
    return compare_bucket(side(a), side(b), layout)


def maximum_matching(a: list[tuple], b: list[tuple]) -> int:
    """The most pairs of rows of A and B with equal k and every double within the tolerance
    (augmenting paths)."""
    fits = [[j for j, q in enumerate(b) if p[0] == q[0] and close(p[1], q[1])
             and close(p[2], q[2])] for p in a]
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in fits[i]:
            if j not in seen:
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return sum(augment(i, set()) for i in range(len(a)))


BASES = [0.0, 4e-10, 1.0, -3.5, 1e12, 2.5e-9]
NUDGES = [1.0, 1 + 1e-12, 1 - 4e-10, 1 + 1e-6, 1 + 9e-10]


@st.composite
def rows(draw, size: int) -> list[tuple]:
    out = []
    for _ in range(draw(st.integers(0, size))):
        base = draw(st.sampled_from([None, *BASES]))
        x = None if base is None else base * draw(st.sampled_from(NUDGES)) + draw(
            st.sampled_from([0.0, 6e-10, -6e-10, 3e-9]))
        out.append((draw(st.sampled_from([None, 1, 2, 2**53 + 1])), x, 0.0,
                    draw(st.integers(0, 3))))
    return out


@settings(max_examples=300, deadline=None)
@given(a=rows(8), b=rows(8))
def test_one_double_pairs_as_many_rows_as_a_maximum_matching(a, b):
    found = compared(a, b).counts
    most = maximum_matching(a, b)
    assert (found.equal, found.only_a, found.only_b, found.changed) == (
        most, len(a) - most, len(b) - most, 0)
    swapped = compared(b, a).counts
    assert (swapped.only_a, swapped.only_b, swapped.equal) == (found.only_b, found.only_a,
                                                               found.equal)


@settings(max_examples=100, deadline=None)
@given(a=rows(10), seed=st.integers(0, 1000))
def test_the_same_rows_with_doubles_moved_within_the_tolerance_are_equal(a, seed):
    rng = np.random.default_rng(seed)
    b = [(k, None if x is None else x * (1 + 1e-12), y - 1e-12, int(rng.integers(0, 3)))
         for k, x, y, _ in a]
    b = [b[i] for i in rng.permutation(len(b))]
    found = compared(a, b).counts
    assert (found.equal, found.only_a, found.only_b) == (len(a), 0, 0)


def test_values_within_the_tolerance_across_a_rounding_edge_are_equal():
    """0.4e-9 and 0.6e-9 round apart at 1e-9 but are within it; 1 - d, 1 against 1, 1 + d
    pair both rows (1 with 1 first would leave two unpaired)."""
    found = compared([(1, 0.4e-9, 0.0, 0)], [(1, 0.6e-9, 0.0, 0)]).counts
    assert (found.equal, found.only_a, found.only_b) == (1, 0, 0)
    d = 0.9e-9
    found = compared([(1, 1 - d, 0.0, 0), (1, 1.0, 0.0, 0)],
                     [(1, 1.0, 0.0, 1), (1, 1 + d, 0.0, 1)]).counts
    assert (found.equal, found.only_a, found.only_b, found.moved) == (2, 0, 0, 2)
    found = compared([(1, 1.0, 0.0, 0)], [(1, 1.0 + 1e-6, 0.0, 0), (2, 1.0, 0.0, 0)]).counts
    assert (found.equal, found.only_a, found.only_b) == (0, 1, 2)


def test_the_doubles_are_part_of_the_identity_and_shown_as_such():
    layout = layout_of("output", (SCHEMA, SCHEMA), MULTISET)
    assert (layout.identity, layout.tolerant, layout.values) == (("k",), ("x", "y"), ())
    shown = compared([(1, 2.0, 0.0, 0)], [(1, 3.0, 0.0, 1)]).differences.to_pylist()
    assert [(r["difference"], r["k"], r["x"], r["batch_a"], r["batch_b"]) for r in shown] == [
        ("only_a", 1, 2.0, 0, None), ("only_b", 1, 3.0, None, 1)]

"""Buckets are ranges of the key hash: each hash is in its bucket's range, the ranges tile the
hashes, and the key-hash layout's row groups nest in the ranges of 2, 4, ..., 64 buckets."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from jobs.execution.bucketing import HASHES, hash_buckets, hash_range, key_buckets, key_hashes
from jobs.recordings.layout import RANGES, row_groups
from jobs.storage import ARRIVAL_COLUMN, KEY_HASH_COLUMN

hashes_ = st.lists(st.integers(0, HASHES - 1), max_size=50).map(
    lambda xs: np.array(xs, dtype=np.uint64))


@given(hashes=hashes_, buckets=st.integers(1, 500))
def test_a_hash_is_in_the_range_of_its_bucket(hashes, buckets):
    of = hash_buckets(hashes, buckets)
    assert ((of >= 0) & (of < buckets)).all()
    for h, b in zip(hashes.tolist(), of.tolist(), strict=True):
        lo, hi = hash_range(b, buckets)
        assert lo <= h < hi


@given(buckets=st.integers(1, 500))
def test_the_ranges_tile_the_hashes(buckets):
    ranges = [hash_range(b, buckets) for b in range(buckets)]
    assert ranges[0][0] == 0 and ranges[-1][1] == HASHES
    assert all(a[1] == b[0] for a, b in pairwise(ranges)) and all(lo < hi for lo, hi in ranges)


@given(hashes=hashes_, buckets=st.integers(1, 64))
def test_modulo_buckets_are_the_hash_modulo_the_count(hashes, buckets):
    assert (hash_buckets(hashes, buckets, modulo=True) == (hashes % np.uint64(buckets))).all()


@given(keys=st.lists(st.one_of(st.none(), st.text(max_size=3)), max_size=200))
def test_row_groups_keep_arrival_and_nest_in_every_power_of_two_of_buckets(keys):
    table = pa.table({"k": pa.array(keys, pa.string()), "i": pa.array(range(len(keys)))})
    groups = row_groups(table, "k")
    assert len(groups) <= RANGES
    laid = pa.concat_tables(groups) if groups else None
    if laid is None:
        assert not keys
        return
    arrival = laid.column(ARRIVAL_COLUMN).to_numpy()
    assert sorted(arrival.tolist()) == list(range(len(keys)))
    assert laid.column("i").to_pylist() == arrival.tolist()  # (each row's own position)
    hashes = laid.column(KEY_HASH_COLUMN).to_numpy()
    assert (hashes == key_hashes(table.column("k"))[arrival]).all()
    for group in groups:  # rows of a group: in arrival order, one bucket of 2 .. 64 buckets
        within = group.column(ARRIVAL_COLUMN).to_numpy()
        assert (np.diff(within) > 0).all()
        for buckets in (2, 4, 8, 16, 32, 64):
            assert len(set(key_buckets(group.column("k"), buckets).tolist())) == 1

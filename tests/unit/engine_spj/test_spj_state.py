"""Stores index entries on the looked-up positions; size counts stored entries."""

from engine.spj.aggregates import AggOp
from engine.spj.state import Bucket, Entry, SpjState, Store, size


def test_store_finds_entries_by_indexed_positions() -> None:
    store = Store([(1,)])
    a, b, c = Entry((1, 5), 1, None), Entry((2, 5), 2, None), Entry((3, 6), 1, None)
    for k, e in enumerate((a, b, c)):
        store.add(k, e)
    assert list(store.find((1,), (5,))) == [a, b] and list(store.find((1,), (7,))) == []


def test_size_counts_entries_representatives_groups_and_map_pairs() -> None:
    aggs = [AggOp("COUNT_DISTINCT", 0, 0)]
    store = Store()
    store.add((1,), Entry((1,), 4, {0: {1: 4, 2: 1}}))
    reps = [{(0,): Bucket({"max": (1,), "min": (0,)}, {0: {5: 1}})}]
    state = SpjState([store], [], reps, {(1,), (2,)}, {(): [{1: 1, 2: 1, 3: 1}]})
    # emitted 2 + group 1 + its 3 pairs + bucket entry 1 + its 2 pairs + 2 reps + 1 pair
    assert size(state, aggs, False) == 12
    assert size(SpjState([], [[(1,), (2,)], [(3,)]], []), aggs, True) == 3

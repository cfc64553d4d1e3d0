"""The aggregate algebra: partial states merge to the value of the whole multiset."""

import statistics
from fractions import Fraction

import pytest

from engine.spj.aggregates import AggOp, median

VALUES = [5, 1, 5, None, 9, 2]


def fold(op: AggOp, values: list, distinct: bool = False):
    acc = op.empty()
    for v in values:
        acc = op.merge(acc, op.part(v, 1), 1, distinct)
    return acc


@pytest.mark.parametrize(("func", "want"), [
    ("COUNT", 5), ("SUM", 22), ("AVG", Fraction(22, 5)), ("MIN", 1), ("MAX", 9),
    ("COUNT_DISTINCT", 4), ("MEDIAN", Fraction(5))])
def test_folding_values_one_by_one_gives_the_aggregate(func: str, want) -> None:
    op = AggOp(func, 0, 0)
    assert op.final(fold(op, VALUES)) == want


def test_scaled_parts_equal_repeated_values() -> None:
    op = AggOp("SUM", 0, 0)
    acc = op.merge(op.empty(), op.part(4, 3), 2, False)  # 2 copies of 3 tuples with value 4
    assert op.final(acc) == 24 and acc[1] == 6


def test_set_fold_counts_duplicates_once_and_reports_changes() -> None:
    op, parts = AggOp("COUNT_DISTINCT", 0, 0), {}
    assert op.fold(parts, 0, 7) and not op.fold(parts, 0, 7) and op.fold(parts, 0, 8)
    assert op.final(parts[0]) == 2 and op.extra(parts[0]) == 2


def test_median_equals_statistics_median() -> None:
    counts = {3: 2, 10: 1, -4: 3}
    flat = [v for v, c in counts.items() for _ in range(c)]
    assert median(counts) == statistics.median(Fraction(v) for v in flat)
    assert median({}) is None


def test_encode_decode_round_trip() -> None:
    for func in ("COUNT_DISTINCT", "AVG", "MAX"):
        op = AggOp(func, 0, 0)
        acc = fold(op, VALUES)
        assert op.decode(op.encode(acc)) == acc
    assert AggOp("COUNT", None, None).final(3) == 3  # COUNT(*) keeps a plain count

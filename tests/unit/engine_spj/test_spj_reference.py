"""The naive reference evaluator on hand-computed inputs."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

from engine.spj import reference

S2 = {"S": ["A", "B"], "T": ["C"]}
STREAMS = {"S": [{"A": 1, "B": 2}, {"A": 1, "B": 5}, {"A": 2, "B": 9}],
           "T": [{"C": 3}, {"C": 6}, {"C": 6}]}


def test_bag_and_set_join() -> None:
    # B=2 joins C=3,6,6; B=5 joins 6,6; B=9 none
    assert reference("SELECT S.A FROM S, T WHERE S.B < T.C", S2, STREAMS) == Counter({(1,): 5})
    assert reference("SELECT DISTINCT S.A, T.C FROM S, T WHERE S.B < T.C", S2, STREAMS) == {
        (1, 3), (1, 6)}


def test_self_join_and_constants() -> None:
    got = reference("SELECT x.B, y.B FROM S x, S y WHERE x.A = y.A AND x.B < y.B", S2, STREAMS)
    assert got == Counter({(2, 5): 1})
    assert reference("SELECT A FROM S WHERE B BETWEEN 3 AND 9", S2, STREAMS) == Counter(
        {(1,): 1, (2,): 1})


def test_aggregates() -> None:
    got = reference("SELECT S.A, COUNT(*), SUM(T.C), AVG(S.B), MIN(T.C), COUNT(DISTINCT T.C), "
                    "MEDIAN(T.C) FROM S, T WHERE S.B < T.C GROUP BY S.A", S2, STREAMS)
    # pairs: (2,3),(2,6),(2,6),(5,6),(5,6)
    assert got == {(1, 5, 27, Fraction(16, 5), 3, 2, 6)}
    assert reference("SELECT COUNT(*), MAX(B) FROM S WHERE A > 5", S2, STREAMS) == {(0, None)}


def test_nulls_never_satisfy_predicates() -> None:
    streams = {"S": [{"A": None, "B": 1}, {"A": 3, "B": 1}], "T": []}
    assert reference("SELECT B FROM S WHERE A > 0", S2, streams) == Counter({(1,): 1})


def test_null_never_joins_not_even_with_null():
    streams = {"S": [{"A": None, "B": 1}, {"A": 2, "B": 1}], "T": [{"D": None, "E": 0},
                                                                  {"D": 2, "E": 0}]}
    result = reference("SELECT S.B FROM S, T WHERE S.A = T.D", {"S": ["A", "B"], "T": ["D", "E"]},
                       streams)
    assert result == Counter({(1,): 1})  # only the 2 = 2 pair


def test_constant_select_items() -> None:
    schemas = {"S": ["A"], "T": ["D"]}
    streams = {"S": [{"A": 1}, {"A": 2}], "T": [{"D": 2}, {"D": 3}]}
    assert reference("SELECT 1 FROM S, T WHERE S.A < T.D", schemas, streams) == {(1,): 3}
    assert reference("SELECT DISTINCT 'x', S.A FROM S, T WHERE S.A < T.D", schemas, streams) == \
        {("x", 1), ("x", 2)}
    assert reference("SELECT DISTINCT 1 FROM S, T WHERE S.A > T.D", schemas, streams) == set()

"""Fooling sets: witness families give 2^N distinguishable prefixes; bounded siblings do not."""

from __future__ import annotations

import random

import pytest

from engine.spj import analyze, states
from engine.spj.parse import parse

ST = {"S": ["A", "B", "C"], "T": ["D", "E"]}
S2 = {"S": ["A", "B"], "T": ["C"]}

UNBOUNDED = [
    ("SELECT DISTINCT A FROM S WHERE A > 10", ST, "C1"),
    ("SELECT S.A FROM S, T WHERE S.A = T.D", ST, "C1"),
    ("SELECT A FROM S, T WHERE A > 10 AND B = C AND B = 10", S2, "C1"),
    ("SELECT A FROM S, T WHERE B = C AND A = 10", S2, "C2"),
    ("SELECT S.A FROM S, T WHERE S.B < T.D AND S.A = 10", ST, "C3"),
    ("SELECT A FROM S, T WHERE A = 10 AND B < C AND B > 10 AND C > 10", S2, "C3"),
    ("SELECT DISTINCT S.A FROM S, T WHERE S.B < T.D AND S.C < T.E AND S.A = 10", ST, "C3"),
    ("SELECT DISTINCT S.A FROM S, T WHERE S.A = 10 AND S.B > T.D AND S.C > T.E AND S.B > 10",
     ST, "C3"),
    ("SELECT DISTINCT S.A FROM S, T WHERE S.B < T.D AND T.D < S.C AND S.A = 10", ST, "C3"),
    ("SELECT MAX(S.B) FROM S, T WHERE S.B < T.C", S2, "AGG-C3"),
    ("SELECT A, COUNT(*) FROM S WHERE A > 10 GROUP BY A", ST, "AGG-C1"),
    ("SELECT COUNT(DISTINCT B) FROM S WHERE A = 1", ST, "AGG-C2"),
]


@pytest.mark.parametrize(("sql", "schemas", "cond"), UNBOUNDED, ids=[u[0] for u in UNBOUNDED])
def test_witness_family_separates_all_subsets(sql: str, schemas, cond: str) -> None:
    a = analyze(sql, schemas)
    assert not a.bounded and cond in {v.condition for v in a.violations}
    w = a.witness
    assert w is not None and w.condition in {v.condition for v in a.violations}
    for n in (1, 4, 7):
        assert states(a.query, w.family(n)) == 2 ** n


@pytest.mark.parametrize(("sql", "schemas"), [UNBOUNDED[4][:2], UNBOUNDED[9][:2]])
def test_witness_family_at_n_10(sql: str, schemas) -> None:
    a = analyze(sql, schemas)
    assert states(a.query, a.witness.family(10)) == 1024


SIBLINGS = [
    # (unbounded query, bounded sibling with the same schema)
    ("SELECT S.A FROM S, T WHERE S.B < T.D AND S.A = 10",
     "SELECT DISTINCT S.A FROM S, T WHERE S.B < T.D AND S.A = 10", ST),
    ("SELECT DISTINCT S.A FROM S, T WHERE S.A = 10 AND S.B > T.D AND S.C > T.E AND S.B > 10",
     "SELECT DISTINCT S.A FROM S, T WHERE S.A = 10 AND S.B > T.D AND S.B > 10", ST),
    ("SELECT MAX(S.B) FROM S, T WHERE S.B < T.C", "SELECT MAX(T.C) FROM S, T WHERE S.B < T.C",
     S2),
    ("SELECT S.A FROM S, T WHERE S.A = T.D", "SELECT S.A FROM S, T WHERE S.A = T.D AND S.A > 10 "
     "AND T.D < 20", ST),
]


@pytest.mark.parametrize(("bad", "good", "schemas"), SIBLINGS, ids=[s[1] for s in SIBLINGS])
def test_bounded_sibling_has_few_states_on_the_same_family(bad: str, good: str, schemas) -> None:
    unbounded, bounded = analyze(bad, schemas), analyze(good, schemas)
    assert not unbounded.bounded and bounded.bounded
    n = 8
    fam = unbounded.witness.family(n)
    assert states(unbounded.query, fam) == 2 ** n
    assert states(parse(good, schemas), fam) <= 2 * n + 2


def test_random_unbounded_queries_get_a_witness() -> None:
    rng = random.Random(7)
    attrs = ["S.A", "S.B", "S.C", "T.D", "T.E"]
    checked = 0
    while checked < 25:
        preds = []
        for _ in range(rng.randint(1, 4)):
            x, y = rng.sample(attrs, 2)
            preds.append(f"{x} {rng.choice(['<', '=', '>', '<='])} {y}" if rng.random() < 0.6
                         else f"{x} {rng.choice(['<', '=', '>'])} {rng.choice([10, 20])}")
        sql = (f"SELECT {rng.choice(['', 'DISTINCT '])}S.A FROM S, T WHERE "
               + " AND ".join(preds))
        a = analyze(sql, ST)
        if a.bounded:
            continue
        checked += 1
        assert a.witness is not None, sql
        assert states(a.query, a.witness.family(5)) == 32, sql

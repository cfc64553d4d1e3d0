"""Verdicts on the example queries of both papers, as the design notes list them."""

from __future__ import annotations

import pytest

from engine.spj import analyze

ST = {"S": ["A", "B", "C"], "T": ["D", "E"]}
S2 = {"S": ["A", "B"], "T": ["C"]}

# (name, schemas, FROM/WHERE tail, projection, bag verdict, set verdict, failing condition)
TABLE_1 = [
    ("Q1", ST, "FROM S WHERE A > 10", "A", True, False, "C1"),
    ("Q2", ST, "FROM S, T WHERE S.A = T.D", "S.A", False, False, "C1"),
    ("Q3", ST, "FROM S, T WHERE S.A = T.D AND S.A > 10 AND T.D < 20", "S.A", True, True, None),
    ("Q4", ST, "FROM S, T WHERE S.B < T.D AND S.A = 10", "S.A", False, True, "C3"),
    ("Q5", ST, "FROM S, T WHERE S.B < T.D AND S.C < T.E AND S.A = 10", "S.A", False, False,
     "C3"),
    ("Q6", ST, "FROM S, T WHERE S.B < T.D AND S.C < T.E AND S.B < T.E AND S.C < T.D "
     "AND S.A = 10", "S.A", False, True, "C3"),
    ("Q7", ST, "FROM S, T WHERE S.B < T.D AND T.D > 10 AND S.B < 20 AND S.A = 10", "S.A",
     True, True, None),
    ("Ex5.7", S2, "FROM S, T WHERE A < 20 AND A = C AND C > 10 AND B > 20", "A", True, True,
     None),
    ("Ex5.8", S2, "FROM S, T WHERE A > 10 AND B = C AND B = 10", "A", False, False, "C1"),
    ("Ex5.9/5.11", S2, "FROM S, T WHERE A = 10 AND B < C AND B > 10 AND C > 10", "A", False,
     True, "C3"),
    ("Ex5.12", ST, "FROM S, T WHERE S.A = 10 AND S.B > T.D AND S.C > T.E AND S.B > 10", "S.A",
     False, False, "C3"),
    ("union", S2, "FROM S, T WHERE B = C AND A = 10", "A", False, False, "C2"),
    ("Ex7.4", {"S": ["A", "B", "C", "D"], "T": ["E", "F"]},
     "FROM S, T WHERE A = 10 AND B > F AND C > F AND D > F", "A", False, True, "C3"),
]


@pytest.mark.parametrize(("name", "schemas", "tail", "proj", "bag", "set_", "cond"), TABLE_1,
                         ids=[row[0] for row in TABLE_1])
def test_arasu_examples(name, schemas, tail, proj, bag, set_, cond) -> None:
    for distinct, expected in (("", bag), ("DISTINCT ", set_)):
        a = analyze(f"SELECT {distinct}{proj} {tail}", schemas)
        assert a.bounded is expected, (name, distinct, a.violations)
        assert a.semantics == ("set" if distinct else "bag")
        if expected:
            assert a.violations == [] and a.synopsis is not None
        else:
            assert a.violations and a.synopsis is None
    if cond is not None:
        failing = "" if not bag else "DISTINCT "
        a = analyze(f"SELECT {failing}{proj} {tail}", schemas)
        assert cond in {v.condition for v in a.violations}


def test_q4_violation_names_the_join_attributes() -> None:
    a = analyze("SELECT S.A FROM S, T WHERE S.B < T.D AND S.A = 10", ST)
    (v,) = a.violations
    assert v.condition == "C3" and {"S.B", "T.D"} <= set(v.attributes)
    assert "S.B" in v.explanation and "T.D" in v.explanation
    assert a.to_json()["violations"][0]["condition"] == "C3"


def test_ex5_12_set_counts_two_max_classes() -> None:
    a = analyze("SELECT DISTINCT S.A FROM S, T WHERE S.A = 10 AND S.B > T.D AND S.C > T.E "
                "AND S.B > 10", ST)
    (v,) = a.violations
    assert "2 MaxRef" in v.explanation and {"S.B", "S.C"} <= set(v.attributes)


def test_q3_synopsis_bound_counts_bounded_values() -> None:
    a = analyze("SELECT S.A FROM S, T WHERE S.A = T.D AND S.A > 10 AND T.D < 20", ST)
    # S keeps (rep, count) for A in 11..19: 9 buckets x 2 units; T the same
    assert a.synopsis.units == 2 * 9 * 2


def test_integer_gap_and_closure_bounds() -> None:
    # 3 < A < 4 is empty over the integers: trivially bounded
    assert analyze("SELECT DISTINCT S.B FROM S, T WHERE S.A > 3 AND S.A < 4", ST).bounded
    # A is bounded only through the closure (A = D, D in 11..19)
    assert analyze("SELECT DISTINCT S.A FROM S, T WHERE S.A = T.D AND T.D > 10 AND T.D < 20",
                   ST).bounded
    # bounded on one side only is unbounded
    assert not analyze("SELECT DISTINCT S.A FROM S, T WHERE S.A = T.D AND T.D > 10", ST).bounded


def test_between_and_le_normalise_to_strict_forms() -> None:
    assert analyze("SELECT DISTINCT S.A FROM S WHERE S.A BETWEEN 1 AND 5", ST).bounded
    assert analyze("SELECT DISTINCT S.A FROM S, T WHERE S.B <= T.D AND S.A = 10", ST).bounded
    assert not analyze("SELECT S.A FROM S, T WHERE S.B <= T.D AND S.A = 10", ST).bounded


def test_ex8_1_self_join_set_removes_covered_occurrence() -> None:
    sql = ("SELECT {} S1.A FROM S S1, S S2 WHERE S1.A = 10 AND S1.A = S2.A AND S1.B = S2.B "
           "AND S1.B > 10")
    a = analyze(sql.format("DISTINCT"), {"S": ["A", "B"]})
    assert a.bounded and any("S2" in n for n in a.notes)
    bag = analyze(sql.format(""), {"S": ["A", "B"]})
    assert not bag.bounded and "C2" in {v.condition for v in bag.violations}


AGG = [
    ("decomposition", "SELECT A, SUM(B), MAX(C) FROM S WHERE A = 10 GROUP BY A", ST, True, None),
    ("single unbounded group", "SELECT A, COUNT(*) FROM S WHERE A > 10 GROUP BY A", ST, False,
     "AGG-C1"),
    ("single holistic", "SELECT A, MEDIAN(B) FROM S WHERE A = 10 GROUP BY A", ST, False,
     "AGG-C2"),
    ("single holistic bounded", "SELECT COUNT(DISTINCT B) FROM S WHERE B > 0 AND B < 9", ST,
     True, None),
    ("Ex8.7", "SELECT S.A, T.C, SUM(S.B) FROM S, T WHERE S.A < 20 AND T.C < 20 AND S.A > 10 "
     "AND T.C > 10 GROUP BY S.A, T.C", S2, True, None),
    ("erratum MAX", "SELECT MAX(S.B) FROM S, T WHERE S.B < T.C", S2, False, "AGG-C3"),
    ("erratum staircase", "SELECT MAX(S.C) FROM S, T WHERE S.A = T.D AND S.A > 0 AND S.A < 5 "
     "AND S.B < T.E", ST, False, "AGG-C3"),
    ("MAX on the Max side", "SELECT MAX(T.C) FROM S, T WHERE S.B < T.C", S2, True, None),
    ("COUNT needs bag Q'_R", "SELECT COUNT(*) FROM S, T WHERE S.B < T.C", S2, False, "AGG-C1"),
    ("multi holistic", "SELECT COUNT(DISTINCT S.B) FROM S, T WHERE S.A = 1 AND T.C = 2", S2,
     False, "AGG-C2"),
]


@pytest.mark.parametrize(("name", "sql", "schemas", "bounded", "cond"), AGG,
                         ids=[row[0] for row in AGG])
def test_aggregate_examples(name, sql, schemas, bounded, cond) -> None:
    a = analyze(sql, schemas)
    assert a.bounded is bounded, a.violations
    if cond:
        assert cond in {v.condition for v in a.violations}


APP = {"S": ["A", "I"], "T": ["B", "J"], "U": ["C", "K"]}
APP_TS = {"S": "I", "T": "J", "U": "K"}
XYZ = {"X": ["A", "I"], "Y": ["D", "J"], "Z": ["C", "K"]}
XYZ_TS = {"X": "I", "Y": "J", "Z": "K"}


def test_schiff_ozcep_paper_example() -> None:
    where = "FROM S, T, U WHERE S.I > T.J AND T.J > U.K AND S.A > T.B AND T.B > 0 AND T.B < 5"
    bag = analyze(f"SELECT S.A, T.B {where}", APP, APP_TS)
    assert bag.bounded and bag.proof == "sufficient"
    st = analyze(f"SELECT DISTINCT S.A, T.B {where}", APP, APP_TS)
    assert not st.bounded and st.proof == "not_certified"
    assert "C1" in {v.condition for v in st.violations}


@pytest.mark.parametrize(("sql", "bounded"), [
    # P-C1: two Hasse parents (T1 says NO, the sound rules say YES)
    ("SELECT Z.C FROM X, Y, Z WHERE X.I > Z.K AND Y.J > Z.K AND Z.C > 0 AND Z.C < 4", True),
    # P-C3a: projection at depth 2
    ("SELECT Z.C FROM X, Y, Z WHERE X.I > Y.J AND Y.J > Z.K AND Z.C > 0 AND Z.C < 4", True),
    # P-C2a: join at distance 2 on a bounded attribute
    ("SELECT Z.C FROM X, Y, Z WHERE X.I > Y.J AND Y.J > Z.K AND X.A = Z.C AND Z.C > 0 "
     "AND Z.C < 4", True),
    # P-C3b: two trees, unbounded projection
    ("SELECT X.A FROM X, Y", False),
    # unbounded projection on the latest stream is fine (G3)
    ("SELECT X.A FROM X, Y WHERE X.I > Y.J", True),
    # unbounded equality join (G1)
    ("SELECT X.A FROM X, Y WHERE X.I > Y.J AND X.A = Y.D", False),
    # merged streams (equal timestamps): the equality join becomes a filter
    ("SELECT X.A FROM X, Y WHERE X.I = Y.J AND X.A = Y.D", True),
])
def test_application_time_bag_rules(sql: str, bounded: bool) -> None:
    a = analyze(sql, XYZ, XYZ_TS)
    assert a.bounded is bounded, a.violations
    assert a.proof == ("sufficient" if bounded else "not_certified")


def test_theorem_2_counterexample_is_not_certified() -> None:
    schemas = {"Z": ["C", "K"], "Y": ["A", "F", "J"], "X1": ["B", "I1"], "X2": ["E", "I2"]}
    ts = {"Z": "K", "Y": "J", "X1": "I1", "X2": "I2"}
    sql = ("SELECT DISTINCT Y.F FROM Z, Y, X1, X2 WHERE Y.F = 1 AND Y.J > Z.K AND X1.I1 > Y.J "
           "AND X2.I2 > Y.J AND X1.B < Y.A AND Z.C < X2.E")
    a = analyze(sql, schemas, ts)
    assert not a.bounded and a.proof == "not_certified"

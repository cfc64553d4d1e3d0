"""The SPJ executor on the README examples and hand-made streams, with answers worked by hand."""

from __future__ import annotations

from fractions import Fraction

import pytest

from engine.spj import SpjError, SpjExecutor, reference

ST = {"S": ["A", "B", "C"], "T": ["D", "E"]}
S2 = {"S": ["A", "B"], "T": ["C"]}


def s(a, b=0, c=0) -> tuple[str, dict]:
    return "S", {"A": a, "B": b, "C": c}


def t(d, e=0) -> tuple[str, dict]:
    return "T", {"D": d, "E": e}


def run(ex: SpjExecutor, batches: list[list]) -> tuple[object, list[list[dict]]]:
    state, out = ex.init(), []
    for batch in batches:
        state, rows = ex.step(state, batch)
        out.append(rows)
    return state, out


# -- README examples ----------------------------------------------------------------------------
Q3 = "SELECT S.A FROM S, T WHERE S.A = T.D AND S.A > 10 AND T.D < 20"


def test_q3_bag_counts_new_result_tuples_per_batch() -> None:
    ex = SpjExecutor(Q3, ST)
    assert (ex.mode, ex.kind, ex.bound, ex.output_columns) == ("synopsis", "bag", 36,
                                                              ["S.A", "count"])
    batches = [[s(12), s(12), t(12), s(25)], [t(12), t(15), s(15)], []]
    state, out = run(ex, batches)
    # batch 1: the two S(12) join T(12): 2 tuples <12>; S(25) fails the implied filter A < 20.
    # batch 2: the new T(12) joins both S(12): 2 more; S(15) joins T(15) of the same batch: 1.
    assert out == [[{"S.A": 12, "count": 2}],
                   [{"S.A": 12, "count": 2}, {"S.A": 15, "count": 1}], []]
    events = [e for b in batches for e in b]
    streams = {"S": [r for n, r in events if n == "S"], "T": [r for n, r in events if n == "T"]}
    assert reference(Q3, ST, streams) == {(12,): 4, (15,): 1}
    # one (representative, count) per occupied bucket: A in {12, 15} on S, D in {12, 15} on T
    assert ex.size(state) == 4


Q4 = "SELECT S.A FROM S, T WHERE S.B < T.D AND S.A = 10"


def test_q4_set_keeps_min_b_and_max_d() -> None:
    ex = SpjExecutor("SELECT DISTINCT S.A FROM S, T WHERE S.B < T.D AND S.A = 10", ST)
    assert ex.bound == 19
    state, out = run(ex, [[s(10, 50), t(3)], [s(11, 0), t(40)], [s(10, 30)], [t(100)]])
    # 50 < 3 and 50 < 40 fail, S(11, 0) fails A = 10; S(10, 30) joins T(40): <10> once, then
    # T(100) finds <10> already emitted
    assert out == [[], [], [{"S.A": 10}], []]
    # emitted {<10>}; S: one bucket (B > 10) with t_min = (10, 30); T: t_max of D < 10 and D > 10
    assert ex.size(state) == 1 + 1 + 2


def test_q4_bag_is_refused_with_c3_and_runs_on_full_history_when_allowed() -> None:
    with pytest.raises(SpjError) as err:
        SpjExecutor(Q4, ST)
    text = str(err.value)
    assert "C3" in text and "S.B" in text and "T.D" in text and "adversarial" in text
    ex = SpjExecutor(Q4, ST, allow_unbounded=True)
    assert (ex.mode, ex.bound) == ("full-history", None)
    state, out = run(ex, [[s(10, 1), s(10, 5), s(9, 0), t(3), t(9)], [s(10, 2)]])
    # B < D: (1,3), (1,9), (5,9) = 3; then B=2 joins D=3 and D=9 = 2 more
    assert out == [[{"S.A": 10, "count": 3}], [{"S.A": 10, "count": 2}]]
    assert ex.size(state) == 5  # S(10,1), S(10,5), S(10,2), T(3), T(9); S(9, 0) filtered


def test_ex5_12_set_is_refused_naming_both_max_classes() -> None:
    with pytest.raises(SpjError, match="C3") as err:
        SpjExecutor("SELECT DISTINCT S.A FROM S, T WHERE S.A = 10 AND S.B > T.D AND S.C > T.E "
                    "AND S.B > 10", ST)
    assert "S.B" in str(err.value) and "S.C" in str(err.value)


def test_max_over_inequality_join_is_refused_and_runs_when_allowed() -> None:
    sql = "SELECT MAX(S.B) FROM S, T WHERE S.B < T.D"
    with pytest.raises(SpjError, match="AGG-C3"):
        SpjExecutor(sql, ST)
    ex = SpjExecutor(sql, ST, allow_unbounded=True)
    _, out = run(ex, [[], [s(0, 5), s(0, 20), t(10)], [t(30)], [s(0, 1)]])
    # no GROUP BY: the single row appears in the first batch; then the largest B below some D
    assert out == [[{"MAX(S.B)": None}], [{"MAX(S.B)": 5}], [{"MAX(S.B)": 20}], []]


def test_ex8_1_set_self_join_runs_on_one_occurrence_and_bag_is_refused() -> None:
    where = "FROM S S1, S S2 WHERE S1.A=10 AND S1.A=S2.A AND S1.B=S2.B AND S1.B>10"
    ex = SpjExecutor(f"SELECT DISTINCT S1.A {where}", ST)
    state, out = run(ex, [[s(10, 5)], [s(10, 11), s(9, 12)], [s(10, 12)]])
    # a tuple joins itself, so the query is "A = 10 and B > 10": <10> from S(10, 11) only
    assert out == [[], [{"S1.A": 10}], []]
    assert ex.size(state) == 1 == ex.bound
    with pytest.raises(SpjError, match="C2"):
        SpjExecutor(f"SELECT S1.A {where}", ST)


# -- representatives and aggregates ---------------------------------------------------------------
def test_q6_keeps_the_t_tuple_with_the_largest_min_of_d_and_e() -> None:
    ex = SpjExecutor("SELECT DISTINCT S.A FROM S, T WHERE S.B < T.D AND S.C < T.E AND S.B < T.E "
                     "AND S.C < T.D AND S.A = 10", ST)
    # T(30, 31) and T(12, 60) share a bucket (D, E > 10); only T(30, 31) joins S(10, 20, 20)
    # (20 < min(D, E)), so t_max must maximise min(D, E) = 30, not max(D, E) = 60.
    _, out = run(ex, [[t(30, 31), t(12, 60)], [s(10, 20, 20)]])
    assert out == [[], [{"S.A": 10}]]


AGG = ("SELECT S.A, COUNT(*), SUM(S.B), AVG(S.B), MIN(S.B), MAX(S.B), COUNT(DISTINCT S.C), "
       "MEDIAN(S.C) FROM S WHERE S.A BETWEEN 1 AND 2 AND S.C BETWEEN 0 AND 9 GROUP BY S.A")


def test_single_stream_aggregates_report_changed_groups() -> None:
    ex = SpjExecutor(AGG, ST)
    cols = ex.output_columns
    _, out = run(ex, [[s(1, 10, 3), s(1, None, 5), s(2, 7, 9), s(3, 1, 1)], [s(1, -4, 3)],
                      [s(2, 7, 10)]])
    # group 1: B values 10 and NULL (skipped by SUM/AVG/MIN/MAX), C values 3, 5 (median 4);
    # group 2: one tuple; A = 3 is filtered. Batch 2 changes group 1 only: B 10, -4 and C 3, 5, 3
    # (median 3). Batch 3: C = 10 fails the filter, nothing changes.
    assert [[tuple(r[c] for c in cols) for r in rows] for rows in out] == [
        [(1, 2, 10, 10, 10, 10, 2, 4), (2, 1, 7, 7, 7, 7, 1, 9)],
        [(1, 3, 6, 3, -4, 10, 2, 3)],
        []]
    assert isinstance(out[0][0]["AVG(S.B)"], Fraction)


def test_ex8_7_sum_is_pushed_into_the_buckets() -> None:
    ex = SpjExecutor("SELECT S.A, T.C, SUM(S.B) FROM S, T WHERE S.A<20 AND T.C<20 AND S.A>10 "
                     "AND T.C>10 GROUP BY S.A, T.C", S2)
    rows = [("S", {"A": 12, "B": 5}), ("S", {"A": 12, "B": 7}), ("T", {"C": 15})]
    state, out = run(ex, [rows, [("T", {"C": 15}), ("S", {"A": 13, "B": 1})]])
    # (12, 15): 5 + 7 = 12, then the second T(15) doubles it to 24; (13, 15): 1 x two T(15) = 2
    assert out == [[{"S.A": 12, "T.C": 15, "SUM(S.B)": 12}],
                   [{"S.A": 12, "T.C": 15, "SUM(S.B)": 24},
                    {"S.A": 13, "T.C": 15, "SUM(S.B)": 2}]]
    assert ex.size(state) <= ex.bound


# -- rows, NULLs, state ----------------------------------------------------------------------------
def test_bad_rows_are_named_and_leave_the_state_untouched() -> None:
    ex = SpjExecutor("SELECT DISTINCT S.A FROM S, T WHERE S.B < T.D AND S.A = 10", ST)
    assert ex.check("S", {"A": 10, "B": None, "Z": "extra"}) is None  # NULL and extras are fine
    missing = ex.check("S", {"A": 10})
    assert "'S'" in missing and "missing column 'B'" in missing
    wrong = ex.check("S", {"A": "10", "B": 1})
    assert "'S'" in wrong and "'A'" in wrong and "'10'" in wrong and "integer" in wrong
    assert "True" in ex.check("T", {"D": True})
    assert "unknown stream 'U'" in ex.check("U", {})
    state, _ = ex.step(ex.init(), [s(10, 1)])
    before = ex.encode(state)
    with pytest.raises(SpjError, match="missing column 'B'"):
        ex.step(state, [t(5), ("S", {"A": 10})])
    assert ex.encode(state) == before


def test_typed_columns_are_checked_by_their_declared_type() -> None:
    ex = SpjExecutor("SELECT S.N FROM S WHERE S.A = 1", {"S": {"A": "int", "N": "string"}})
    assert ex.check("S", {"A": 1, "N": "x"}) is None
    assert "a string" in ex.check("S", {"A": 1, "N": 3})
    _, out = run(ex, [[("S", {"A": 1, "N": None}), ("S", {"A": 1, "N": "x"})]])
    assert out == [[{"S.N": None, "count": 1}, {"S.N": "x", "count": 1}]]


def test_null_never_satisfies_a_comparison() -> None:
    ex = SpjExecutor("SELECT S.A FROM S, T WHERE S.B = T.D", ST, allow_unbounded=True)
    # NULL = NULL is not true (SQL); NULL < 3 neither
    _, out = run(ex, [[s(1, None), t(None)], [s(2, 4), t(4)]])
    assert out == [[], [{"S.A": 2, "count": 1}]]
    ex = SpjExecutor("SELECT DISTINCT S.A FROM S WHERE S.A = 1 AND S.B < 3", ST)
    _, out = run(ex, [[s(1, None)], [s(1, 2)]])
    assert out == [[], [{"S.A": 1}]]


def test_encoding_round_trips_and_is_tied_to_the_query() -> None:
    ex = SpjExecutor(Q3, ST)
    state, _ = run(ex, [[s(12), t(12), t(13)]])
    data = ex.encode(state)
    again = ex.decode(data)
    assert ex.encode(again) == data
    _, rows = ex.step(again, [s(13)])
    assert rows == [{"S.A": 13, "count": 1}]
    other = SpjExecutor(Q3.replace("20", "21"), ST)
    with pytest.raises(SpjError, match="another query"):
        other.decode(data)
    with pytest.raises(SpjError, match="another query"):
        SpjExecutor(Q3, ST, mode="full-history").decode(data)
    with pytest.raises(SpjError, match="not an encoded"):
        ex.decode(b"{nope")


def test_modes() -> None:
    full = SpjExecutor(Q3, ST, mode="full-history")
    state, out = run(full, [[s(12), s(12), t(12)]])
    assert (full.mode, out) == ("full-history", [[{"S.A": 12, "count": 2}]])
    assert full.size(state) == 3
    with pytest.raises(SpjError, match="unknown executor mode"):
        SpjExecutor(Q3, ST, mode="fast")
    with pytest.raises(SpjError, match="C3"):
        SpjExecutor(Q4, ST, allow_unbounded=True, mode="synopsis")
    assert SpjExecutor("SELECT S.A, S.A FROM S", ST).output_columns == ["S.A", "S.A#2", "count"]


# -- application time ---------------------------------------------------------------------------
TS = {"S": {"A": "int", "ts": "timestamp"}, "T": {"D": "int", "ts": "timestamp"}}
STAMPS = {"S": "ts", "T": "ts"}


def test_application_time_set_query_runs_on_synopses() -> None:
    ex = SpjExecutor("SELECT DISTINCT S.A FROM S, T WHERE S.ts < T.ts AND S.A = 1", TS, STAMPS)
    assert ex.mode == "synopsis"
    _, out = run(ex, [[("S", {"A": 1, "ts": 5}), ("T", {"D": 0, "ts": 3})],
                      [("T", {"D": 0, "ts": 9})]])
    assert out == [[], [{"S.A": 1}]]  # T at 3 is earlier than S at 5; T at 9 is later


def test_application_time_bag_query_of_rules_g1_g3_runs_on_down_sets() -> None:
    sql = "SELECT S.A FROM S, T WHERE S.ts < T.ts AND S.A = 1"
    ex = SpjExecutor(sql, TS, STAMPS)
    assert ex.mode == "synopsis" and ex.bound == 2  # S.A = 1: one bucket (value, count)
    state, out = run(ex, [[("S", {"A": 1, "ts": 1}), ("S", {"A": 1, "ts": 2}),
                           ("T", {"D": 0, "ts": 2})], [("T", {"D": 5, "ts": 3})]])
    # T at 2 joins only S at 1 (2 < 2 fails); T at 3 joins both S tuples
    assert out == [[{"S.A": 1, "count": 1}], [{"S.A": 1, "count": 2}]]
    assert ex.size(state) == 1
    with pytest.raises(SpjError, match="timestamp order"):
        ex.step(state, [("S", {"A": 1, "ts": 2})])
    full = SpjExecutor(sql, TS, STAMPS, mode="full-history")
    _, out = run(full, [[("S", {"A": 1, "ts": 1}), ("S", {"A": 1, "ts": 2}),
                         ("T", {"D": 0, "ts": 2})]])
    assert (full.mode, out) == ("full-history", [[{"S.A": 1, "count": 1}]])


# -- projections on no attributes ------------------------------------------------------------------
def test_select_constant_bag_counts_result_tuples() -> None:
    ex = SpjExecutor("SELECT 1 FROM S, T WHERE S.A = T.D AND S.A > 10 AND T.D < 20", ST)
    assert (ex.mode, ex.output_columns) == ("synopsis", ["1", "count"])
    state, out = run(ex, [[s(12), s(12), t(12), s(15)], [t(15), t(12), t(30)], []])
    # batch 1: two S(12) x T(12); batch 2: T(15) x S(15) and T(12) x both S(12); T(30) filtered
    assert out == [[{"1": 1, "count": 2}], [{"1": 1, "count": 3}], []]
    assert ex.size(state) == 4  # buckets S.A in {12, 15}, T.D in {12, 15}


def test_select_distinct_constant_says_once_whether_a_result_exists() -> None:
    ex = SpjExecutor("SELECT DISTINCT 'hit' FROM S, T WHERE S.B < T.D AND S.A = 10", ST)
    state, out = run(ex, [[s(10, 50), t(3)], [s(11, 0), t(40)], [s(10, 30)], [t(100)]])
    # 50 < 3, 50 < 40 fail and S(11, 0) fails A = 10; S(10, 30) joins T(40): 'hit' once
    assert out == [[], [], [{"'hit'": "hit"}], []]
    assert ex.size(state) <= ex.bound


def test_cross_product_without_attributes_fits_its_bound() -> None:
    # each stream's bucket holds a representative of no attribute: a one-unit flag the
    # analyser's bound used to leave out (bound 1, state 3)
    ex = SpjExecutor("SELECT DISTINCT 1 FROM S, T", ST)
    state, out = run(ex, [[s(1)], [t(2), s(3)]])
    assert out == [[], [{"1": 1}]]
    assert ex.size(state) == 3 <= ex.bound


def test_an_application_time_row_without_its_timestamp_is_set_aside_with_a_reason():
    # (before, it stopped the replay: "timestamp None is not an integer tick")
    schemas = {"S": ("A", "I"), "T": ("D", "J")}
    ex = SpjExecutor("SELECT DISTINCT S.A FROM S, T WHERE S.I = T.J AND S.A = 1", schemas,
                     {"S": "I", "T": "J"})
    assert ex.engine == "down-sets"
    missing = {"A": 1, "I": None}
    assert ex.check("S", missing) == ("stream 'S', column 'I': no timestamp (application time "
                                      "needs one on every row)")
    assert ex.check("S", {"A": 1, "I": 5}) is None
    state = ex.init()
    state, rows = ex.step(state, [("S", {"A": 1, "I": 5}), ("T", {"D": 0, "J": 5})])
    assert rows == [{"S.A": 1}]

"""The compiled plan: implied filters, bucket coordinates, join steps and the chosen path."""

from engine.spj.analysis import analyze
from engine.spj.plan import COUNTED, REPS, Plan, coord

ST = {"S": ["A", "B", "C"], "T": ["D", "E"]}


def plan_of(sql: str, kind: str, full: bool = False) -> Plan:
    a = analyze(sql, ST)
    return Plan(a.query, a.verdict.spj, a.verdict.closure, kind, full)


def test_coord_maps_values_outside_the_constants_to_two_buckets() -> None:
    assert [coord(v, (10, 20)) for v in (-5, 10, 15, 20, 99)] == [9, 10, 15, 20, 21]
    assert coord(123, ()) == 0


def test_implied_filters_and_bucket_keys() -> None:
    p = plan_of("SELECT S.A FROM S, T WHERE S.A = T.D AND S.A > 10 AND T.D < 20", "bag")
    s = p.occs.index("S")
    # S.A < 20 is implied through S.A = T.D; NULL never passes
    assert [p.filters[s].passes((a,)) for a in (11, 19, 20, 10, None)] == \
        [True, True, False, False, False]
    assert p.bucketed and p.path == COUNTED and p.keep
    assert p.bucket(s, (12,)) == (12,)
    assert [st.occ for st in p.joins[s]] == [p.occs.index("T")]


def test_set_queries_take_the_representative_path_and_full_history_does_not() -> None:
    sql = "SELECT DISTINCT S.A FROM S, T WHERE S.B < T.D AND S.A = 10"
    assert plan_of(sql, "set").path == REPS
    full = plan_of(sql, "set", full=True)
    assert full.path == COUNTED and not full.bucketed and full.keep
    batch = [("S", {"A": 10, "B": 3, "C": 0}), ("S", {"A": 11, "B": 3, "C": 0}),
             ("T", {"D": 1, "E": 0})]
    assert [i for i, _ in full.tuples(batch)] == [full.occs.index("S"), full.occs.index("T")]

"""The shared planner on the report's examples (``stream-sharing.md`` §5.1-§5.2, transposed to
rows of a ``photons`` recording) and on constructed cases; expected plans are worked out by
hand from the rules in ``engine/sharing/README.md``."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from engine.predicate import TRUE, parse_predicate
from engine.sharing import (
    AggregateView,
    Planner,
    SharedPlan,
    SharingError,
    SharingView,
    Statistics,
    WindowView,
    build_cluster,
    match,
    merge,
    narrow,
    plan_queries,
)
from engine.sharing.execute import pane_outputs, shared_inputs
from engine.sharing.panes import relax_pane
from engine.sharing.plan import duration_text

COLUMNS = {"src": "string", "ra": "double", "dec": "double", "en": "double", "phc": "int",
           "det_time": "timestamp", "seq": "int"}
VELA = "ra BETWEEN 120.0 AND 138.0 AND dec BETWEEN -49.0 AND -40.0"
RXJ = "ra BETWEEN 130.5 AND 135.5 AND dec BETWEEN -48.0 AND -45.0"
S = 1_000_000  # one second in microseconds


def P(text: str):
    return parse_predicate(text, COLUMNS)


@pytest.fixture(scope="module")
def stats() -> Statistics:
    rng = np.random.default_rng(7)
    n = 4000
    sample = pd.DataFrame({"src": "s1", "ra": rng.uniform(100, 160, n),
                           "dec": rng.uniform(-60, -30, n), "en": rng.uniform(0, 3, n),
                           "phc": rng.integers(0, 100, n),
                           "det_time": rng.integers(0, 1000 * S, n), "seq": np.arange(n)})
    return Statistics(rows=1_000_000, sample=sample)


def window_query(name: str, size: int, slide: int, where: str = VELA, kind: str = "time",
                 aggs: tuple[tuple[str, str | None], ...] = (("avg", "en"),),
                 having: str | None = None, key: str | None = "src") -> SharingView:
    aggregates = tuple(AggregateView(f"{fn}_{col or 'all'}", fn, col) for fn, col in aggs)
    outputs = {a.name: "int" if a.fn == "count" else "double" for a in aggregates}
    unit = S if kind == "time" else 1
    return SharingView(
        name, frozenset({"det_time", "src"} | {c for _, c in aggs if c}), P(where),
        WindowView(kind, size * unit, slide * unit, time="det_time"), key=key,
        aggregates=aggregates, having=None if having is None else parse_predicate(having,
                                                                                   outputs))


def select_query(name: str, where: str, columns: set[str]) -> SharingView:
    return SharingView(name, frozenset(columns), P(where))


# the report's queries q1-q4 (§5.1)
Q1 = window_query("q1", 60, 40, having="avg_en >= 1.3")
Q2 = window_query("q2", 20, 10)
Q3 = select_query("q3", f"en >= 1.3 AND {RXJ}", {"ra", "dec", "en", "det_time"})
Q4 = select_query("q4", VELA, {"ra", "dec", "phc", "en", "det_time"})


def registered(stats: Statistics, *views: SharingView) -> Planner:
    planner = Planner(stats)
    for view in views:
        planner.register(view)
    return planner


def test_r1_coarser_window_matches_the_finer_stream(stats) -> None:
    planner = registered(stats, Q2)
    before = planner.clusters[0]
    assert planner.register(Q1) == "match"
    after = planner.clusters[0]
    assert (after.where, after.columns) == (before.where, before.columns)
    plan = planner.current().to_json()
    [group] = plan["clusters"][0]["pane_groups"]
    assert group["queries"] == ["q1", "q2"] and group["pane"] == "10s"
    assert group["states"] == ["count(en)", "sum(en)"]
    q1 = plan["residuals"]["q1"]
    assert (q1["operator"], q1["panes_per_window"], q1["panes_per_slide"]) == ("panes", 6, 4)
    assert q1["aggregates"] == {"avg_en": "sum(en) / count(en)"}
    assert q1["having"] == "avg_en >= 1.3" and q1["where"] == "TRUE"


def test_r2_finer_window_widens_the_coarser_stream(stats) -> None:
    planner = registered(stats, Q1)
    assert planner.register(Q2) == "merge"
    plan = planner.current().to_json()
    assert plan["clusters"][0]["pane_groups"][0]["pane"] == "10s"
    q2 = plan["residuals"]["q2"]
    assert (q2["panes_per_window"], q2["panes_per_slide"], q2["having"]) == (2, 1, None)
    assert plan["residuals"]["q1"]["having"] == "avg_en >= 1.3"


def test_r3_narrower_selection_matches(stats) -> None:
    planner = registered(stats, Q4)
    assert planner.register(Q3) == "match"
    cluster = planner.clusters[0]
    assert cluster.where == P(VELA)
    assert cluster.residual("q3").where == P(f"en >= 1.3 AND {RXJ}")  # RXJ is not implied
    assert cluster.residual("q4").where == TRUE


def test_r4_wider_selection_merges_by_absorption(stats) -> None:
    planner = registered(stats, Q3)
    assert planner.register(Q4) == "merge"
    cluster = planner.clusters[0]
    assert cluster.where == P(VELA)  # RELAX(RXJ AND en >= 1.3, VELA) = VELA
    assert "phc" in cluster.columns
    assert cluster.residual("q4").where == TRUE


def test_r5_window_query_and_selection_share_the_row_stream(stats) -> None:
    one, other = registered(stats, Q1, Q3), registered(stats, Q3, Q1)
    assert one.current().plan_hash == other.current().plan_hash
    cluster = one.clusters[0]
    assert cluster.where == P(VELA)
    assert cluster.residual("q1").where == TRUE  # W is VELA: q1's pre-selection is dropped
    assert cluster.residual("q3").where == P(f"en >= 1.3 AND {RXJ}")


def test_r6_r7_widening_serves_more_queries_than_matching(stats) -> None:
    widening = registered(stats, Q1, Q2, Q3, Q4)
    matching = Planner(stats, widening=False)
    for view in (Q1, Q2, Q3, Q4):
        matching.register(view)
    assert len(widening.clusters) == 1
    # without widening: q2's finer window and q4's extra column find no stream; q3 matches q1's
    # row stream (our streams always carry rows, so this is one more than in the report)
    assert sorted(c.names for c in matching.clusters) == [("q1", "q3"), ("q2",), ("q4",)]
    counters = plan_queries([Q1, Q2, Q3, Q4], stats).counters()
    # the canonical plan without widening finds q1 -> q2 (R1) and q3 -> q4 (R3): 2 of 4 share;
    # with widening all but the first
    assert counters["shared_with_widening"] == 3 and counters["shared_match_only"] == 2


def test_r8_relaxed_window_of_example_4_1(stats) -> None:
    assert relax_pane(45, 30, 30, 20) == 5
    plan = plan_queries([window_query("a", 45, 30), window_query("b", 30, 20)], stats).to_json()
    assert plan["clusters"][0]["pane_groups"][0]["pane"] == "5s"
    a, b = plan["residuals"]["a"], plan["residuals"]["b"]
    assert (a["panes_per_window"], a["panes_per_slide"]) == (9, 6)
    assert (b["panes_per_window"], b["panes_per_slide"]) == (6, 4)


def test_three_way_window_relaxation_in_every_order(stats) -> None:
    views = [window_query("a", 60, 40), window_query("b", 20, 10), window_query("c", 45, 30)]
    hashes = set()
    for order in itertools.permutations(views):
        planner = registered(stats, *order)
        assert [g.pane for g in planner.clusters[0].pane_groups] == [5 * S]
        hashes.add(planner.plan().plan_hash)
    assert len(hashes) == 1


def test_disjoint_predicates_share_the_scan_and_keep_their_own_residuals(stats) -> None:
    low, high = select_query("low", "en < 0.1", {"en"}), select_query("high", "en > 2.9", {"en"})
    plan = plan_queries([low, high], stats)
    [cluster] = plan.clusters
    assert cluster.where == P("en < 0.1 OR en > 2.9")
    assert cluster.residual("low").where == low.where
    assert cluster.residual("high").where == high.where
    rows = pd.DataFrame({"en": [0.0, 0.1, 1.0, 2.9, 3.0, None]})
    inputs = shared_inputs(plan, rows)
    assert list(inputs["low"].index) == [0] and list(inputs["high"].index) == [4]


def test_a_wide_query_stands_alone_beside_narrow_ones(stats) -> None:
    narrow = [select_query(f"n{i}", f"en BETWEEN {i / 10} AND {i / 10 + 0.005}", {"en"})
              for i in range(6)]
    wide = select_query("wide", "TRUE", {"en"})
    plan = plan_queries([*narrow, wide], stats)
    # joining would make W TRUE and hand every row to the six narrow residuals
    assert sorted(c.names for c in plan.clusters) == [tuple(f"n{i}" for i in range(6)),
                                                      ("wide",)]
    assert plan.counters()["new"] == 2


def test_a_widened_predicate_over_budget_becomes_its_hull(stats) -> None:
    views = [select_query(f"b{i:02d}", f"en BETWEEN {i / 20} AND {i / 20 + 0.01} "
                          f"AND phc > {i}", {"en", "phc"}) for i in range(40)]
    cluster = build_cluster(views, stats)
    assert cluster.where == P("en BETWEEN 0.0 AND 1.96 AND phc > 0")  # bounds of all 40 boxes
    assert cluster.residual("b00").where == P("en BETWEEN 0.0 AND 0.01")  # W implies phc > 0
    assert all(cluster.residual(v.name).where == v.where for v in views[1:])
    rng = np.random.default_rng(3)
    rows = pd.DataFrame({"en": rng.uniform(0, 2.5, 500), "phc": rng.integers(0, 60, 500)})
    plan = SharedPlan.of([cluster], {}, stats)
    inputs = shared_inputs(plan, rows)
    for view in views:
        assert list(inputs[view.name].index) == list(rows.index[view.where.evaluate(rows)])


def test_absorption_drops_implied_conjuncts_from_residuals(stats) -> None:
    a = select_query("a", "en >= 1.0", {"en"})
    b = select_query("b", "en >= 1.0 AND ra > 130.0", {"en", "ra"})
    cluster = plan_queries([a, b], stats).cluster_of("a")
    assert cluster.where == P("en >= 1.0")
    assert cluster.residual("b").where == P("ra > 130.0")
    assert cluster.residual("a").where == TRUE


def test_several_windows_on_one_pane_set(stats) -> None:
    views = [window_query("t10", 10, 10), window_query("s30", 30, 10),
             window_query("t60", 60, 60)]
    plan = plan_queries(views, stats).to_json()
    [group] = plan["clusters"][0]["pane_groups"]
    assert group["queries"] == ["s30", "t10", "t60"] and group["pane"] == "10s"
    assert [plan["residuals"][q]["panes_per_window"] for q in ("t10", "s30", "t60")] == [1, 3, 6]


def test_holistic_aggregate_beside_decomposable_ones(stats) -> None:
    views = [window_query("avg10", 10, 10), window_query("avg20", 20, 20),
             window_query("median10", 10, 10, aggs=(("median", "en"),)),
             window_query("mixed10", 10, 10, aggs=(("avg", "en"), ("median", "en")))]
    plan = plan_queries(views, stats).to_json()
    assert [g["queries"] for g in plan["clusters"][0]["pane_groups"]] == [["avg10", "avg20"]]
    assert plan["residuals"]["median10"]["operator"] == "own"
    assert plan["residuals"]["mixed10"]["operator"] == "own"


def test_differing_pre_selection_never_shares_panes(stats) -> None:
    views = [window_query("hot", 10, 10, where="en > 1.0"),
             window_query("hotter", 20, 20, where="en > 2.0"),
             window_query("other_key", 20, 20, where="en > 1.0", key=None)]
    plan = plan_queries(views, stats)
    assert all(not c.pane_groups for c in plan.clusters)


def test_having_stays_residual_and_windows_stay_exact(stats) -> None:
    fine = window_query("fine", 20, 10, where="TRUE", having="avg_en >= 1.3")
    coarse = window_query("coarse", 60, 40, where="TRUE", having="avg_en >= 1.5")
    plan = plan_queries([fine, coarse], stats)
    cluster = plan.clusters[0]
    assert [g.queries for g in cluster.pane_groups] == [("coarse", "fine")]
    assert "avg_en" not in cluster.where.columns and "avg_en" not in cluster.columns
    assert cluster.residual("fine").having == fine.having
    assert cluster.residual("coarse").having == coarse.having
    # §3.10 C1: the fine window [0, 20) (avg 1.0) fails its HAVING, but its rows belong to
    # the coarse window [0, 60) (avg 1.667), which must be emitted
    rows = pd.DataFrame({"src": "s1", "en": [1.0, 2.0, 2.0], "det_time": [5 * S, 25 * S, 45 * S],
                         "seq": [0, 1, 2]})
    out = pane_outputs(plan, rows, order=("seq",))
    assert list(out["coarse"]["__window"]) == [0, 40 * S]
    assert list(out["coarse"]["avg_en"]) == pytest.approx([5 / 3, 2.0])
    assert list(out["fine"]["__window"]) == [10 * S, 20 * S, 30 * S, 40 * S]


def test_time_and_count_windows_never_share_panes(stats) -> None:
    views = [window_query("time10", 10, 5), window_query("time20", 20, 10),
             window_query("count10", 10, 5, kind="count"),
             window_query("count20", 20, 10, kind="count")]
    plan = plan_queries(views, stats).to_json()
    groups = {tuple(g["queries"]): g for g in plan["clusters"][0]["pane_groups"]}
    assert set(groups) == {("time10", "time20"), ("count10", "count20")}
    assert groups[("time10", "time20")]["pane"] == "5s"
    assert groups[("count10", "count20")]["pane"] == 5
    assert "count(*)" in groups[("count10", "count20")]["states"]


def test_nulls_in_the_aggregated_column_are_not_averaged(stats) -> None:
    aggs = (("avg", "en"), ("count", "en"), ("count", None), ("sum", "en"), ("min", "en"))
    views = [window_query("a", 20, 20, where="TRUE", aggs=aggs),
             window_query("b", 40, 40, where="TRUE", aggs=aggs)]
    plan = plan_queries(views, stats)
    rows = pd.DataFrame({"src": "s1", "en": [1.0, None, 3.0, None],
                         "det_time": [1 * S, 12 * S, 25 * S, 30 * S], "seq": [0, 1, 2, 3]})
    out = pane_outputs(plan, rows, order=("seq",))
    b = out["b"].iloc[0]
    assert (b["avg_en"], b["count_en"], b["count_all"], b["sum_en"], b["min_en"]) == \
        (2.0, 2, 4, 4.0, 1.0)
    a = out["a"].set_index("__window")
    assert a.loc[0, "avg_en"] == 1.0 and a.loc[20 * S, "avg_en"] == 3.0
    assert a.loc[20 * S, "count_all"] == 2 and a.loc[20 * S, "count_en"] == 1


def test_narrowing_after_a_removal(stats) -> None:
    planner = registered(stats, Q3, Q4)
    assert planner.clusters[0].where == P(VELA)
    narrowed = planner.remove("q4")
    assert narrowed is not None
    assert narrowed.where == P(f"en >= 1.3 AND {RXJ}")
    assert "phc" not in narrowed.columns
    assert narrowed.residual("q3").where == TRUE
    assert planner.plan().plan_hash == plan_queries([Q3], stats).plan_hash
    assert planner.remove("q3") is None and planner.clusters == []


def test_match_requires_implication_columns_and_a_dividing_pane(stats) -> None:
    cluster = registered(stats, Q2).clusters[0]
    assert match(cluster, Q1)
    assert not match(cluster, window_query("q15", 15, 15))  # 10s slices do not divide 15s
    assert not match(cluster, Q4)  # phc is not carried
    assert not match(cluster, select_query("wide", "en > 1.0", {"en"}))  # not implied by W


def test_merge_widens_and_narrow_shrinks_the_stream(stats) -> None:
    cluster = build_cluster([Q3], stats)
    merged = merge(cluster, Q4, stats)
    assert merged.where == P(VELA) and set(merged.columns) == Q3.columns | Q4.columns
    assert merged.names == ("q3", "q4")
    narrowed = narrow(merged, "q4", stats)
    assert narrowed is not None
    assert (narrowed.where, narrowed.columns) == (cluster.where, cluster.columns)
    assert narrow(narrowed, "q3", stats) is None


def test_queries_on_different_recordings_are_refused(stats) -> None:
    vitals = SharingView("hr", frozenset({"hr"}), recording="vitals")
    ticks = SharingView("px", frozenset({"price"}), recording="ticks")
    with pytest.raises(SharingError, match="hr reads 'vitals', px reads 'ticks'"):
        plan_queries([ticks, vitals], stats)
    with pytest.raises(SharingError, match="listed twice"):
        plan_queries([vitals, vitals], stats)


def test_plan_json_shape(stats) -> None:
    plan = plan_queries([Q1, Q2, Q3, Q4], stats).to_json()
    assert isinstance(plan["plan_hash"], str) and len(plan["plan_hash"]) == 64
    [cluster] = plan["clusters"]
    assert cluster["queries"] == ["q1", "q2", "q3", "q4"]
    assert P(cluster["where"]) == P(VELA)  # the SQL text parses back
    assert cluster["columns"] == sorted(cluster["columns"]) and "phc" in cluster["columns"]
    assert set(plan["residuals"]) == {"q1", "q2", "q3", "q4"}
    estimates = plan["estimates"]
    assert estimates["rows_read"] == {"shared": 1_000_000, "standalone": 4_000_000}
    assert estimates["cost"]["shared"] < estimates["cost"]["standalone"]
    assert estimates["rows_entering_queries"]["shared"] < 4_000_000


def test_selectivity_is_estimated_from_the_sample() -> None:
    sample = pd.DataFrame({"en": [0.5, 1.5, 2.5, None]})
    stats = Statistics(rows=100, sample=sample)
    assert stats.selectivity(parse_predicate("en > 1.0", {"en": "double"})) == (2 + 0.5) / 5
    assert stats.selectivity(TRUE) == 1.0
    assert Statistics(rows=100).selectivity(parse_predicate("en > 1.0", {"en": "double"})) \
        == pytest.approx(1 / 3)


@pytest.mark.parametrize("us, text", [(5 * S, "5s"), (90 * S, "90s"), (60 * S, "1m"),
                                      (250_000, "250ms"), (7, "7us"), (0, "0s"),
                                      (86_400 * S, "1d")])
def test_pane_durations_are_shown_in_the_largest_dividing_unit(us: int, text: str) -> None:
    assert duration_text(us) == text


def test_keys_and_time_span_are_counted_on_the_sample() -> None:
    sample = pd.DataFrame({"k": ["a", "b", "a", None], "t": [5, 17, 2, 9]})
    stats = Statistics(rows=10, sample=sample)
    assert (stats.key_count("k"), stats.key_count(None), stats.span("t")) == (2, 1, 15)
    assert Statistics(rows=10, keys={"k": 7}).key_count("k") == 7


def test_estimates_and_description_say_why_queries_share(stats) -> None:
    low = select_query("low", "en < 0.1", {"en"})
    plan = plan_queries([Q1, Q2, Q3, Q4, low], stats)
    queries = plan.estimates()["queries"]
    for name in ("q1", "q2", "q3", "q4"):  # sharing costs them less than their own scans
        assert queries[name]["in_cluster"] < queries[name]["alone"]
    assert plan.cluster_of("low").names == ("low",)
    assert queries["low"]["in_cluster"] == queries["low"]["alone"]
    text = plan.describe()
    assert plan.plan_hash in text and "then having avg_en >= 1.3" in text
    assert all(f"\n{name}: cluster" in text for name in ("low", "q1", "q2", "q3", "q4"))


def test_a_cluster_is_built_once_for_its_members_and_w_and_never_for_a_namesake(stats):
    """Planning builds the same cluster again as it tries and undoes moves: it is built once
    per members and W for one statistics object, and a member with the same name (another
    query object) gets a cluster of its own."""
    a, b = window_query("q1", 10 * S, 10 * S), window_query("q2", 20 * S, 10 * S)
    assert build_cluster([a, b], stats) is build_cluster([b, a], stats)
    namesake = window_query("q1", 10 * S, 10 * S, where=RXJ)
    built = build_cluster([namesake, b], stats)
    assert built.members[0] is namesake
    assert built.residual("q1").where != build_cluster([a, b], stats).residual("q1").where

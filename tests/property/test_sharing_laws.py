"""Laws of the shared planner on random query sets and random rows (NULLs, boundary values):
the plan does not depend on the registration order; each query receives exactly the rows
passing its own predicate (W, then its residual); windows assembled from shared panes equal
the windows computed directly (HAVING applied); pane partials equal direct aggregation."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from sharing_reference import direct_windows, frame_windows, same

from engine.predicate import TRUE, parse_predicate
from engine.sharing import AggregateView, Planner, SharingView, Statistics, WindowView, plan_queries
from engine.sharing.execute import pane_outputs, shared_inputs
from engine.sharing.partials import pane_partials, windows_from_panes

SETTINGS = {"deadline": None, "derandomize": True, "max_examples": 40}
COLUMNS = {"k": "string", "t": "timestamp", "seq": "int", "v": "int", "w": "double",
           "s": "string"}
WHERES = ["TRUE", "v >= 0", "v > 1", "v BETWEEN 0 AND 2", "w < 0.5", "v >= 0 AND w < 0.5",
          "s IN ('a', 'b')", "s = 'a' OR v IS NULL", "v < 0 OR v > 2", "w IS NOT NULL",
          "NOT (v = 1)", "v >= 0 OR w >= 0.5"]
AGGREGATES = [("count", None), ("count", "v"), ("sum", "v"), ("avg", "v"), ("min", "v"),
              ("max", "v"), ("sum", "w"), ("avg", "w"), ("max", "w"), ("median", "v")]


@st.composite
def frames(draw: st.DrawFn) -> pd.DataFrame:
    n = draw(st.integers(1, 40))
    t = draw(st.lists(st.integers(0, 30), min_size=n, max_size=n))
    return pd.DataFrame({
        "k": draw(st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n)),
        "t": pd.array(t, dtype="int64"),
        "seq": pd.array(range(n), dtype="int64"),
        "v": pd.array(draw(st.lists(st.one_of(st.none(), st.integers(-1, 3)), min_size=n,
                                    max_size=n)), dtype="Int64"),
        "w": pd.array(draw(st.lists(st.one_of(st.none(), st.sampled_from([0.0, 0.25, 0.5, 1.5])),
                                    min_size=n, max_size=n)), dtype="float64"),
        "s": draw(st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "c"])), min_size=n,
                           max_size=n)),
    })


@st.composite
def views(draw: st.DrawFn, name: str, wheres: list[str], keys: list[str | None],
          kinds: list[str]) -> SharingView:
    where = parse_predicate(draw(st.sampled_from(wheres)), COLUMNS)
    if draw(st.integers(0, 4)) == 0:  # a select query
        cols = draw(st.sets(st.sampled_from(sorted(COLUMNS)), min_size=1))
        return SharingView(name, frozenset(cols), where)
    kind = draw(st.sampled_from(kinds))
    if kind == "time":
        size, slide = draw(st.sampled_from([2, 4, 6, 12])), draw(st.sampled_from([1, 2, 3, 4, 6]))
    else:
        size, slide = draw(st.sampled_from([2, 3, 4, 6])), draw(st.sampled_from([1, 2, 3]))
    picked = draw(st.lists(st.sampled_from(AGGREGATES), min_size=1, max_size=3, unique=True))
    aggs = tuple(AggregateView(f"a{i}", fn, col) for i, (fn, col) in enumerate(picked))
    having = None
    if draw(st.booleans()):
        target = aggs[0]
        ctype = "int" if target.fn == "count" or (target.fn != "avg" and target.column == "v") \
            else "double"
        having = parse_predicate(f"a0 >= {draw(st.sampled_from([1, 2]))}",
                                 {a.name: ctype if a is target else "double" for a in aggs})
    cols = frozenset({"t", "seq", "k"} | {a.column for a in aggs if a.column})
    return SharingView(name, cols, where, WindowView(kind, size, slide, time="t"),
                       key=draw(st.sampled_from(keys)), aggregates=aggs, having=having)


@st.composite
def query_sets(draw: st.DrawFn) -> list[SharingView]:
    n = draw(st.integers(1, 8))
    # small pools per set, so that queries often agree on what pane sharing needs
    wheres = draw(st.lists(st.sampled_from(WHERES), min_size=1, max_size=3))
    keys = draw(st.lists(st.sampled_from(["k", None]), min_size=1, max_size=2))
    kinds = draw(st.lists(st.sampled_from(["time", "count"]), min_size=1, max_size=2))
    return [draw(views(f"q{i}", wheres, keys, kinds)) for i in range(n)]


def stats_of(frame: pd.DataFrame) -> Statistics:
    return Statistics(rows=1_000_000, sample=frame)


@settings(**SETTINGS)
@given(query_sets(), frames(), st.randoms(use_true_random=False))
def test_plan_hash_does_not_depend_on_registration_order(queries, frame, rnd) -> None:
    canonical = plan_queries(queries, stats_of(frame))
    shuffled = list(queries)
    rnd.shuffle(shuffled)
    planner = Planner(stats_of(frame))
    for view in shuffled:
        planner.register(view)
    assert planner.plan().plan_hash == canonical.plan_hash
    assert planner.plan().to_json() == canonical.to_json()


@settings(**SETTINGS)
@given(query_sets(), frames())
def test_each_query_receives_the_rows_passing_its_own_predicate(queries, frame) -> None:
    plan = plan_queries(queries, stats_of(frame))
    inputs = shared_inputs(plan, frame)
    for view in queries:
        cluster = plan.cluster_of(view.name)
        assert view.where == TRUE or view.columns <= set(cluster.columns)
        expected = list(frame.index[view.where.evaluate(frame)])
        assert list(inputs[view.name].index) == expected, (view.where.sql, cluster.where.sql)


@settings(**SETTINGS)
@given(query_sets(), frames(), st.randoms(use_true_random=False))
def test_narrowing_after_a_removal_serves_the_rest_exactly(queries, frame, rnd) -> None:
    planner = Planner(stats_of(frame))
    for view in queries:
        planner.register(view)
    gone = rnd.choice(queries)
    planner.remove(gone.name)
    rest = [v for v in queries if v is not gone]
    current = planner.current()
    assert sorted(v.name for v in current.views) == sorted(v.name for v in rest)
    inputs = shared_inputs(current, frame)
    for view in rest:
        assert list(inputs[view.name].index) == list(frame.index[view.where.evaluate(frame)])
    for cluster in current.clusters:  # W passes every row a remaining member needs
        needed = np.zeros(len(frame), dtype=bool)
        for member in cluster.members:
            needed |= member.where.evaluate(frame)
        assert (cluster.where.evaluate(frame) >= needed).all()
    assert planner.plan().plan_hash == plan_queries(rest, stats_of(frame)).plan_hash


@settings(**SETTINGS)
@given(query_sets(), frames())
def test_windows_from_shared_panes_equal_direct_windows(queries, frame) -> None:
    plan = plan_queries(queries, stats_of(frame))
    outputs = pane_outputs(plan, frame, order=("seq",))
    for name, windows in outputs.items():
        view = next(v for v in queries if v.name == name)
        assert same(frame_windows(view, windows), direct_windows(view, frame)), name


@settings(**SETTINGS)
@given(frames(), st.sampled_from(["time", "count"]), st.sampled_from([1, 2, 3]),
       st.sampled_from([1, 2, 3]), st.sampled_from([1, 2]), st.sampled_from(["k", None]))
def test_pane_partials_compose_every_decomposable_aggregate(frame, kind, pane, n, u, key
                                                            ) -> None:
    aggs = tuple(AggregateView(f"a{i}", fn, col) for i, (fn, col) in enumerate(AGGREGATES)
                 if fn != "median")
    view = SharingView("q", frozenset(), TRUE, WindowView(kind, n * pane, u * pane, time="t"),
                       key=key, aggregates=aggs)
    states = sorted({s for a in aggs for s in a.states} | {"count(*)"})
    partials = pane_partials(frame, kind=kind, pane=pane, key=key, time="t", states=states,
                             order=("seq",))
    windows = windows_from_panes(partials, kind=kind, pane=pane, size=n * pane, slide=u * pane,
                                 aggregates=aggs)
    assert same(frame_windows(view, windows), direct_windows(view, frame))

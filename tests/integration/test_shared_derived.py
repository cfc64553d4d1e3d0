"""Shared replays of global windows (``key: none``) and of queries with derived columns: each
query's tables from the shared run equal its standalone run's and its reference; a definition
several members share is computed once per cluster, different definitions of one name stay
apart; four global windows on one pane size are one pane group."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_shared_replay import assert_same_runs, setup

from jobs.runs.validate import validate_run
from jobs.shared.shared_run import SharedReplay, pane_shares

#: Derived columns (name: (sql, type)); ``dv`` twice, defined differently.
DERIVED = {
    "lag": ("dv", "v - lag(v) over (partition by k order by __seq)", "int"),
    "lag_again": ("dv", "v  -  LAG(v) OVER (PARTITION BY k ORDER BY __seq)", "int"),
    "double": ("dv", "coalesce(v, 0) * 2", "int"),
    "running": ("run", "sum(v) over (partition by k order by __seq)", "int"),
    "band": ("band", "case when v is null then -1 when v < 50 then 0 else 1 end", "int"),
    "half": ("half", "v / 2", "double"),
}


def derive(*which: str) -> str:
    lines = [f"  {name}: {{sql: \"{sql}\", type: {typ}}}\n"
             for name, sql, typ in (DERIVED[w] for w in which)]
    return "derive:\n" + "".join(lines) if lines else ""


def global_window(name: str, window: str, aggregates: str = "n: count(), s: sum(v)",
                  where: str | None = None) -> str:
    return (f"name: {name}\nkind: window\ninput: ev\nkey: none\nlateness: 3s\n"
            + (f"where: \"{where}\"\n" if where else "")
            + f"query:\n  window: {window}\n  aggregates: {{{aggregates}}}\n")


GLOBALS = {
    "g_t10": global_window("g_t10", "{type: tumbling, size: 10s}", "n: count(), hi: max(v)"),
    "g_t20": global_window("g_t20", "{type: tumbling, size: 20s}"),
    "g_s20": global_window("g_s20", "{type: sliding, size: 20s, slide: 10s}",
                           "n: count(), lo: min(v)"),
    "g_s30": global_window("g_s30", "{type: sliding, size: 30s, slide: 10s}",
                           "n: count(), a: avg(v)"),
}
DERIVING = {
    "d_sel": ("name: d_sel\nkind: select\ninput: ev\n" + derive("lag", "band")
              + "where: dv > 0\nquery:\n  columns: [k, v, dv, band]\n"),
    "d_win": ("name: d_win\nkind: window\ninput: ev\nlateness: 3s\n" + derive("lag_again")
              + "query:\n  window: {type: tumbling, size: 10s}\n"
              "  aggregates: {n: count(dv), s: sum(dv), lo: min(dv)}\n"),
    "d_other": ("name: d_other\nkind: select\ninput: ev\n" + derive("double", "half")
                + "where: dv < 80\nquery:\n  columns: [k, dv, half]\n"),
    # keyed by a constant of its own (the whole recording one group, as key: none)
    "d_const": ("name: d_const\nkind: window\ninput: ev\nkey: grp\nlateness: 3s\nderive:\n"
                "  grp: {sql: \"'one'\", type: string}\n"
                "query:\n  window: {type: tumbling, size: 20s}\n  aggregates: {n: count()}\n"),
    "d_run": ("name: d_run\nkind: window\ninput: ev\nlateness: 3s\n" + derive("running")
              + "where: run > 100\nquery:\n  window: {type: sliding, size: 20s, slide: 10s}\n"
              "  aggregates: {n: count(), hi: max(run)}\n"),
}


def run_both(spark, storage, queries: dict[str, str], names: list[str], plan: str, seed: int,
             rows: int = 150):
    shared, alone, catalog = setup(spark, storage, rows, seed=seed, queries=queries)
    runner = SharedReplay(shared)
    infos = runner.prepare(names, plan=plan)
    planned = runner.plan(infos)
    runner.run(infos, planned=planned)
    for name in names:
        alone.run(alone.prepare(name, plan=plan))
    run_ids = [i.run_id for i in infos]
    assert_same_runs(shared, alone, run_ids)
    for run_id in run_ids:
        report = validate_run(shared, catalog, run_id)
        assert report.ok, (run_id, report.diff, report.late_mismatch)
    return shared, planned, runner


def test_four_global_windows_are_one_pane_group_computed_once_per_batch(spark, storage):
    names = sorted(GLOBALS)
    shared, (plan, alone), _ = run_both(spark, storage, GLOBALS, names, "rows:23", seed=4)
    assert plan is not None and alone == []
    groups = [g for c in plan.clusters for g in c.pane_groups]
    assert [(g.queries, g.pane, g.key) for g in groups] == [(tuple(names), 10_000_000, None)]
    counters = plan.counters()
    assert counters["pane_groups"] == 1 and counters["windows_from_panes"] == 4
    contexts = {n: shared.context(n) for n in names}
    operators = {n: c.family.operator(c.query, shared.catalog.recordings)
                 for n, c in contexts.items()}
    shares = pane_shares(plan, operators, {n: c.family for n, c in contexts.items()})
    assert sorted(shares) == names and len({id(s) for s in shares.values()}) == 1
    # a global window's output has no key column
    output = shared.storage.read_arrow(shared.warehouse.run_table(
        shared.prepare("g_t10", plan="rows:23").run_id, "output")).column_names
    assert output[:2] == ["window_start", "window_end"] and "__global" not in output


def test_derived_columns_are_computed_once_per_definition_and_kept_apart_by_definition(
        spark, storage):
    queries = {**DERIVING, "g_t10": GLOBALS["g_t10"]}
    names = sorted(queries)
    shared, (plan, alone), runner = run_both(spark, storage, queries, names, "rows:17", seed=6)
    assert plan is not None and alone == []
    derived = {d.queries: d for c in plan.clusters for d in c.derived}
    assert ("d_sel", "d_win") in derived  # one lag, written two ways
    lag = derived["d_sel", "d_win"]
    assert len(lag.streams) == 1 and lag.streams[0].startswith("dv@")
    assert derived["d_other",].streams[0] != lag.streams[0]  # another dv
    counters = plan.counters()
    assert counters["derived_columns_read"] == 8  # dv, band, dv, dv, half, run, grp, __global
    assert counters["derived_columns_computed"] == sum(
        1 for c in plan.clusters for d in c.derived if not d.constant)  # (not __global)
    assert counters["derived_columns_computed"] < counters["derived_columns_read"]
    # the run computed each cluster's definitions once per group of batches
    info = shared.prepare(names[0], plan="rows:17")
    groups, first = 0, 0
    while first <= info.batches:
        groups, first = groups + 1, shared.group_of(info, first)[-1] + 1
    assert runner.derived_computed == groups * counters["derived_columns_computed"]


CHOICES = [*sorted(GLOBALS), *sorted(DERIVING)]


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(CHOICES), min_size=2, max_size=5, unique=True),
       st.sampled_from(["commit", "rows:11", "rows:40"]), st.integers(0, 9),
       st.randoms(use_true_random=False))
def test_random_sets_of_global_and_derived_queries_share_exactly(spark, storage, names, plan,
                                                                  seed, rnd):
    queries = {**GLOBALS, **DERIVING}
    order = list(names)
    rnd.shuffle(order)  # the registration order
    _, (shared_plan, _), _ = run_both(spark, storage, {n: queries[n] for n in names}, order, plan,
                                   seed, rows=90)
    assert shared_plan is not None
    # the plan does not depend on the order the queries are named in
    again = SharedReplay(setup(spark, storage, 90, seed=seed,
                               queries={n: queries[n] for n in names})[0])
    replanned, _ = again.plan(again.prepare(sorted(names), plan=plan))
    assert replanned is not None and replanned.plan_hash == shared_plan.plan_hash

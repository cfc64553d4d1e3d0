"""Shared replays on Spark: several queries on one recording replayed in one pass give each
query exactly the tables of its standalone run (output, late, quarantine, manifest counts),
validate against the reference, and resume after a crash like a single run."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import events_table, small_catalog, write_commits
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.catalog import load_catalog
from jobs.runs.replay import Replay
from jobs.runs.run_info import ReplayError
from jobs.runs.validate import reconcile_run, validate_run
from jobs.shared.shared_run import SharedReplay, pane_shares
from jobs.shared.standalone_compare import table_rows
from jobs.warehouse import Warehouse

QUERIES = {
    "sel_lo": "name: sel_lo\nkind: select\ninput: ev\nwhere: v < 30\nquery:\n  columns: [ts, v]\n",
    "sel_ab": ("name: sel_ab\nkind: select\ninput: ev\nwhere: k IN ('a', 'b') OR v IS NULL\n"
               "query:\n  columns: [k, v]\n"),
    "win_t": ("name: win_t\nkind: window\ninput: ev\nlateness: 3s\nwhere: v < 60\nquery:\n"
              "  window: {type: tumbling, size: 10s}\n"
              "  aggregates: {n: count(), n_v: count(v), s: sum(v), a: avg(v)}\n"),
    "win_s": ("name: win_s\nkind: window\ninput: ev\nlateness: 3s\nwhere: v BETWEEN 20 AND 80\n"
              "query:\n  window: {type: sliding, size: 20s, slide: 5s}\n"
              "  aggregates: {n: count(), hi: max(v), lo: min(v)}\n  having: n > 2\n"),
    # win_t, pane_t and pane_s aggregate the same rows (one where, lateness, key) into 10 s panes
    "pane_t": ("name: pane_t\nkind: window\ninput: ev\nlateness: 3s\nwhere: v < 60\nquery:\n"
               "  window: {type: tumbling, size: 20s}\n"
               "  aggregates: {n: count(), s: sum(v), hi: max(v)}\n"),
    "pane_s": ("name: pane_s\nkind: window\ninput: ev\nlateness: 3s\nwhere: v < 60\nquery:\n"
               "  window: {type: sliding, size: 30s, slide: 10s}\n"
               "  aggregates: {n: count(), lo: min(v), a: avg(v)}\n  having: n > 1\n"),
    "win_c": ("name: win_c\nkind: window\ninput: ev\nlateness: 3s\nwhere: v >= 10\nquery:\n"
              "  window: {type: count, size: 4, every: 2}\n"
              "  aggregates: {n: count(), s: sum(v)}\n"),
}
TABLES = ("output", "late", "quarantine")


def setup(spark, storage, rows: int, seed: int, commits: int = 3,
          queries: dict[str, str] = QUERIES, shared_warehouse: Warehouse | None = None
          ) -> tuple[Replay, Replay, object]:
    """Two warehouses holding the same recording: one for shared runs (``shared_warehouse``
    when given), one for standalone."""
    root = Path(tempfile.mkdtemp(prefix="reprise-shared-"))
    small_catalog(root / "schemas")
    for name, text in queries.items():
        (root / "schemas" / "queries" / f"{name}.yaml").write_text(text)
    catalog = load_catalog(root / "schemas")
    table = events_table(np.random.default_rng(seed), rows)
    replays = []
    for side in ("shared", "alone"):
        warehouse = shared_warehouse if side == "shared" and shared_warehouse else Warehouse(
            root / side)
        write_commits(storage, warehouse.recording("ev"), table, commits)
        replays.append(Replay(spark, storage, warehouse, catalog, exchange="direct"))
    return replays[0], replays[1], catalog


def assert_same_runs(shared: Replay, alone: Replay, run_ids: list[str]) -> None:
    for run_id in run_ids:
        for kind in TABLES:
            pd.testing.assert_frame_equal(table_rows(shared, run_id, kind),
                                          table_rows(alone, run_id, kind), check_dtype=False)
        counts = ["rows_in", "rows_out", "late", "quarantined"]
        assert (shared.manifest(run_id).to_pandas()[counts].values.tolist()
                == alone.manifest(run_id).to_pandas()[counts].values.tolist())


def shared_runs_equal_standalone_and_reference(spark, storage, names: list[str], rows: int,
                                               plan: str) -> None:
    """``names`` replayed as one shared run over ``rows`` events give each query the tables of
    its standalone run, which validate against the reference and reconcile."""
    shared, alone, catalog = setup(spark, storage, rows, seed=7)
    runner = SharedReplay(shared)
    infos = runner.prepare(names, plan=plan)
    shared_plan, on_own = runner.plan(infos)
    assert shared_plan is not None and on_own == []
    runner.run(infos)
    for name in names:
        alone.run(alone.prepare(name, plan=plan))
    run_ids = [i.run_id for i in infos]
    assert run_ids == [alone.prepare(n, plan=plan).run_id for n in names]
    assert_same_runs(shared, alone, run_ids)
    for run_id in run_ids:
        report = validate_run(shared, catalog, run_id)
        assert report.ok, (run_id, report.diff, report.late_mismatch)
        assert reconcile_run(shared, run_id).ok


@pytest.mark.delta_spark_slow
def test_shared_replay_equals_standalone_runs_and_reference(spark, backend_storage):
    """Every query of the file and a QRE query, 240 events in eleven batches (the delta-spark
    leg runs with the slow tests; the next test is its smaller instance)."""
    shared_runs_equal_standalone_and_reference(spark, backend_storage, [*QUERIES, "ev_q"], 240,
                                               "rows:23")


@pytest.mark.delta_spark
def test_a_shared_replay_on_delta_spark_equals_standalone_runs_and_reference(
        spark, delta_spark_storage):
    """The shared replay above on delta-spark, smaller: a select, a sliding window, a pane
    group of two windows and a QRE query, 120 events in four batches."""
    shared_runs_equal_standalone_and_reference(
        spark, delta_spark_storage, ["sel_ab", "win_s", "win_t", "pane_s", "ev_q"], 120,
        "rows:37")


def test_a_shared_replay_on_an_s3_warehouse_equals_standalone_runs(spark, storage,
                                                                   s3_warehouse):
    shared, alone, catalog = setup(spark, storage, 240, seed=7, shared_warehouse=s3_warehouse)
    names = ["sel_lo", "win_t", "pane_t", "pane_s"]
    runner = SharedReplay(shared)
    infos = runner.prepare(names, plan="rows:23")
    plan, on_own = runner.plan(infos)
    assert plan is not None and on_own == []
    runner.run(infos)
    for name in names:
        alone.run(alone.prepare(name, plan="rows:23"))
    run_ids = [i.run_id for i in infos]
    assert_same_runs(shared, alone, run_ids)
    report = validate_run(shared, catalog, run_ids[2])
    assert report.ok, (report.diff, report.late_mismatch)


def test_a_pane_group_aggregates_its_panes_once_and_each_query_gets_its_own_tables(
        spark, storage):
    shared, alone, _ = setup(spark, storage, 300, seed=5)
    names = ["win_t", "pane_t", "pane_s", "sel_lo"]
    runner = SharedReplay(shared)
    infos = runner.prepare(names, plan="rows:37")
    plan, _ = runner.plan(infos)
    assert plan is not None
    groups = [g for c in plan.clusters for g in c.pane_groups]
    assert [(g.queries, g.pane) for g in groups] == [(("pane_s", "pane_t", "win_t"), 10_000_000)]
    contexts = {n: shared.context(n) for n in names}
    operators = {n: c.family.operator(c.query, shared.catalog.recordings)
                 for n, c in contexts.items()}
    shares = pane_shares(plan, operators, {n: c.family for n, c in contexts.items()})
    assert sorted(shares) == ["pane_s", "pane_t", "win_t"]
    assert len({id(s) for s in shares.values()}) == 1
    runner.run(infos)
    # two parts (the pane group; the select) on the run's two buckets: two Spark tasks per
    # group of batches, each reading the group's range once
    groups, first = 0, 0
    while first <= infos[0].batches:
        groups, first = groups + 1, shared.group_of(infos[0], first)[-1] + 1
    assert infos[0].buckets == 2 and runner.tasks == 2 * groups
    for name in names:
        alone.run(alone.prepare(name, plan="rows:37"))
    assert_same_runs(shared, alone, [i.run_id for i in infos])


@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(sorted(QUERIES)), min_size=2, max_size=4, unique=True),
       st.sampled_from(["commit", "rows:11", "rows:40"]), st.integers(0, 3))
def test_random_query_sets_and_batch_plans_share_exactly(spark, storage, names, plan, seed):
    shared, alone, _ = setup(spark, storage, 90, seed=seed)
    runner = SharedReplay(shared)
    infos = runner.prepare(names, plan=plan)
    runner.run(infos)
    for name in names:
        alone.run(alone.prepare(name, plan=plan))
    assert_same_runs(shared, alone, [i.run_id for i in infos])


WHERES = ["v < 30", "v >= 50", "v BETWEEN 20 AND 80", "v IS NULL OR v > 90",
          "k IN ('a', 'b')", "NOT (k = 'c') AND v < 70", "v = 0 OR v = 99", None]
AGGREGATES = ["n: count()", "n_v: count(v)", "s: sum(v)", "a: avg(v)", "lo: min(v)",
              "hi: max(v)", "m: median(v)"]


@st.composite
def random_queries(draw) -> dict[str, str]:
    """Two to four random select and window queries on ``ev`` (where, columns, window,
    aggregates, having), several often behind the same predicate (so panes are shared)."""
    queries = {}
    for i in range(draw(st.integers(2, 4))):
        name = f"r{i}"
        where = draw(st.sampled_from(WHERES))
        head = f"name: {name}\ninput: ev\n" + (f"where: \"{where}\"\n" if where else "")
        if draw(st.booleans()):
            columns = draw(st.lists(st.sampled_from(["k", "ts", "v"]), min_size=1, max_size=3,
                                    unique=True))
            queries[name] = head + f"kind: select\nquery:\n  columns: [{', '.join(columns)}]\n"
            continue
        size, slide = sorted(draw(st.lists(st.sampled_from([5, 10, 20]), min_size=2,
                                           max_size=2)), reverse=True)
        window = (f"{{type: tumbling, size: {size}s}}" if size == slide else
                  f"{{type: sliding, size: {size}s, slide: {slide}s}}")
        aggregates = draw(st.lists(st.sampled_from(AGGREGATES), min_size=1, max_size=3,
                                   unique=True))
        having = "  having: n > 1\n" if "n: count()" in aggregates and draw(st.booleans()) \
            else ""
        queries[name] = (head + f"kind: window\nlateness: 3s\nquery:\n  window: {window}\n"
                         f"  aggregates: {{{', '.join(aggregates)}}}\n{having}")
    return queries


@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(random_queries(), st.sampled_from(["commit", "rows:13", "rows:50"]), st.integers(0, 9),
       st.randoms(use_true_random=False))
def test_random_queries_share_exactly_and_match_their_reference(spark, storage, queries, plan,
                                                                seed, rnd):
    shared, alone, catalog = setup(spark, storage, 120, seed=seed, queries=queries)
    names = list(queries)
    rnd.shuffle(names)  # the registration order
    runner = SharedReplay(shared)
    infos = runner.prepare(names, plan=plan)
    runner.run(infos)
    for name in names:
        alone.run(alone.prepare(name, plan=plan))
    run_ids = [i.run_id for i in infos]
    assert_same_runs(shared, alone, run_ids)
    for run_id in run_ids:
        assert validate_run(shared, catalog, run_id).ok, run_id


def killed_then_resumed(spark, storage, killed_on: str) -> None:
    """A shared run killed (on the ``killed_on`` backend) after one run's table commits of a
    group and before its manifest commit, resumed on ``storage``, equals an uninterrupted run."""
    shared, alone, _ = setup(spark, storage, 150, seed=11, commits=5)
    names = ["sel_lo", "win_t", "win_c"]
    runner = SharedReplay(alone)
    infos = runner.prepare(names, plan="rows:20")
    runner.run(infos)  # uninterrupted, in the other warehouse
    target = infos[1].run_id
    script = Path(__file__).parents[1] / "support" / "crash_shared_replay.py"
    env = {**os.environ, "REPRISE_BATCHES_PER_JOB": "2", "REPRISE_DELTA_BACKEND": killed_on}
    killed = subprocess.run([sys.executable, str(script), str(shared.warehouse.root),
                             str(Path(shared.catalog.queries["sel_lo"].source).parents[1]),
                             "rows:20", target, "3", *names], env=env, check=False)
    assert killed.returncode == -9
    resumed = SharedReplay(Replay(spark, storage, shared.warehouse, shared.catalog,
                                  exchange="direct", batches_per_job=2))
    again = resumed.prepare(names, plan="rows:20")
    done = {i.run_id: resumed.runner.manifest(i.run_id).num_rows for i in again}
    assert 0 < min(done.values()) < again[0].batches + 1  # the kill left work to do
    resumed.run(again)
    assert_same_runs(shared, alone, [i.run_id for i in infos])


def test_a_killed_shared_run_resumes_to_the_uninterrupted_result(spark, backend_storage):
    killed_then_resumed(spark, backend_storage, backend_storage.name)  # (each backend in turn)


@pytest.mark.delta_spark
def test_a_shared_run_killed_on_delta_rs_resumes_on_delta_spark(spark, delta_spark_storage):
    """The resume finds the killed attempt's commits by their metadata, which delta-rs lays out
    beside the commit's own fields (it took the group's state version for none and resumed the
    windows from an empty state: a window's row twice)."""
    killed_then_resumed(spark, delta_spark_storage, "delta-rs")


def test_a_run_whose_manifest_does_not_advance_stops_the_shared_run(spark, storage, monkeypatch):
    # (a manifest that did not list a group's batches after they ran made the shared run repeat
    # that group for ever; found with a run's tables left inconsistent by hand)
    shared, _, _ = setup(spark, storage, 120, seed=3)
    runner = SharedReplay(shared)
    infos = runner.prepare(["win_t", "sel_lo"], plan="rows:40")
    stuck = infos[0].run_id
    manifest = shared.manifest
    monkeypatch.setattr(shared, "manifest", lambda run_id: manifest(run_id).slice(0, 0)
                        if run_id == stuck else manifest(run_id))
    with pytest.raises(ReplayError, match=f"run {stuck}: its manifest does not list batches 0-"):
        runner.run(infos)

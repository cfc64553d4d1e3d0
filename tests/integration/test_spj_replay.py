"""SPJ queries replayed on Spark: synopsis output equals the naive reference under any plan."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from helpers import events_table, write_commits
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.catalog import load_catalog
from engine.registry import operator_for
from engine.specs import CatalogError
from jobs.runs.replay import Replay
from jobs.runs.validate import validate_run
from jobs.warehouse import Warehouse

RECORDINGS = {
    "ev": "name: ev\nkey: k\ntime: ts\ncolumns: {k: string, ts: timestamp, v: int}\n",
    "lk": "name: lk\nkey: k\ntime: ts\ncolumns: {k: string, ts: timestamp, g: int}\n",
}
QUERIES = {
    # bounded: one counter per (bucket of v, g) pair; grouped aggregate over a join
    "ev_join": "SELECT l.g, COUNT(*), SUM(e.v) FROM ev e, lk l "
               "WHERE e.v = l.g AND l.g >= 0 AND l.g < 5 GROUP BY l.g",
    # bounded set query on one stream
    "ev_distinct": "SELECT DISTINCT e.v FROM ev e WHERE e.v >= 10 AND e.v < 20",
    # unbounded bag join (every ev tuple below a future lk.g must be counted)
    "ev_below": "SELECT e.v FROM ev e, lk l WHERE e.v < l.g",
}


def spj_catalog(root: Path, allow_unbounded: bool = False):
    for name, text in RECORDINGS.items():
        (root / "recordings").mkdir(parents=True, exist_ok=True)
        (root / "recordings" / f"{name}.yaml").write_text(text)
    (root / "queries").mkdir(parents=True, exist_ok=True)
    for name, sql in QUERIES.items():
        inputs = "{ev: ev, lk: lk}" if " lk " in sql else "{ev: ev}"
        extra = "allow_unbounded: true\n" if allow_unbounded and name == "ev_below" else ""
        (root / "queries" / f"{name}.yaml").write_text(
            f"name: {name}\nkind: spj\ninputs: {inputs}\n{extra}batch: {{by: rows, rows: 10}}\n"
            f"query: \"{sql}\"\n")
    return load_catalog(root)


def lookup_table(rng: np.random.Generator, n: int) -> pa.Table:
    ts = (np.arange(n) * 1_900_000 + 1_700_000_000_000_000).astype("int64")
    return pa.table({"k": pa.array([f"l{i}" for i in range(n)], pa.string()),
                     "ts": pa.array(ts, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                     "g": pa.array(rng.integers(-2, 8, n), pa.int64())})


def make_replay(spark, storage, n: int, seed: int, allow_unbounded: bool = False) -> Replay:
    root = Path(tempfile.mkdtemp(prefix="reprise-spj-"))
    catalog = spj_catalog(root / "schemas", allow_unbounded)
    warehouse = Warehouse(root / "warehouse")
    rng = np.random.default_rng(seed)
    write_commits(storage, warehouse.recording("ev"), events_table(rng, n), 2)
    write_commits(storage, warehouse.recording("lk"), lookup_table(rng, max(1, n // 4)), 2)
    return Replay(spark, storage, warehouse, catalog)


def final_answer(replay: Replay, query: str, run_id: str) -> list[tuple]:
    op = operator_for(replay.catalog.query(query), replay.catalog.recordings)
    output = replay.storage.read_arrow(replay.warehouse.run_table(run_id, "output")).to_pandas()
    view = op.final_view(output)
    return sorted(map(tuple, view.astype(object).where(view.notna(), None).to_numpy().tolist()),
                  key=repr)


def final_synopsis(replay: Replay, run_id: str) -> bytes:
    state = replay.storage.read_arrow(replay.warehouse.run_table(run_id, "state"))
    return state.column("synopsis")[0].as_py()


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(n=st.integers(1, 120), seed=st.integers(0, 10_000),
       cuts=st.lists(st.lists(st.integers(0, 150), max_size=5), min_size=2, max_size=2),
       query=st.sampled_from(["ev_join", "ev_distinct"]))
@pytest.mark.parametrize("engine", ["spark", "driver"])
def test_spj_replay_equals_reference_under_random_plans(spark, storage, engine, n, seed, cuts,
                                                        query):
    replay = make_replay(spark, storage, n, seed)
    replay.engine = engine
    answers, synopses = [], []
    for i, plan_cuts in enumerate(cuts):
        info = replay.prepare(query, run_id=f"plan{i}")  # the merged input fixes the total
        points = sorted({min(c, info.total) for c in plan_cuts} | {info.total})
        info = replay.prepare(query, plan="cuts:" + ",".join(map(str, points)),
                              run_id=f"cut{i}")
        replay.run(info)
        report = validate_run(replay, replay.catalog, info.run_id)
        assert report.ok, (report.diff, report.late_mismatch, report.reconciles)
        answers.append(final_answer(replay, query, info.run_id))
        synopses.append(final_synopsis(replay, info.run_id))
    assert answers[0] == answers[1]
    assert synopses[0] == synopses[1]  # same input, different cuts: the same synopsis bytes


def test_rows_without_event_time_are_quarantined_with_a_reason(spark, storage):
    replay = make_replay(spark, storage, 200, seed=3)
    info = replay.prepare("ev_join")
    manifest = replay.run(info).to_pandas()
    quarantine = replay.storage.read_arrow(replay.warehouse.run_table(info.run_id, "quarantine"))
    reasons = set(quarantine.column("reason").to_pylist())
    assert quarantine.num_rows == int(manifest["quarantined"].sum()) > 0
    assert reasons == {"missing time column 'event_time'"}
    assert validate_run(replay, replay.catalog, info.run_id).ok


def test_unbounded_query_is_refused_with_the_analysers_reason(spark, storage):
    replay = make_replay(spark, storage, 40, seed=5)
    with pytest.raises(CatalogError, match=r"ev_below.yaml: field 'query': .*C\d.*allow_unbounded"):
        replay.prepare("ev_below")


def test_allowed_unbounded_query_runs_on_the_full_history_and_its_state_grows(spark, storage):
    replay = make_replay(spark, storage, 300, seed=9, allow_unbounded=True)
    info = replay.prepare("ev_below", plan="rows:60")
    manifest = replay.run(info).to_pandas()
    assert validate_run(replay, replay.catalog, info.run_id).ok
    entries = []
    state = replay.warehouse.run_table(info.run_id, "state")
    for version in manifest["state_version"].iloc[:-1]:
        table = replay.storage.read_arrow(state, int(version))
        entries.append(table.column("entries")[0].as_py())
    assert entries == sorted(entries) and entries[-1] > 4 * entries[0] > 0

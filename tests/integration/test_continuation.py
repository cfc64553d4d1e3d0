"""Continuing a run commit by commit equals one fresh replay at the last version (every family)."""

from __future__ import annotations

import itertools
import json
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from helpers import events_table, small_catalog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_spj_replay import lookup_table, spj_catalog

from engine.catalog import load_catalog
from engine.registry import operator_for
from jobs.runs.continuation import continue_query
from jobs.runs.replay import Replay
from jobs.runs.validate import validate_run
from jobs.warehouse import Warehouse

FINAL_QUERY = """\
name: ev_f
kind: qre
input: ev
lateness: 3s
output: final
query: "iter(eps(0), atom(v > 50, 1) | atom(v <= 50, 0), +)"
"""
#: Query -> what it covers (the catalog of tests/support/helpers.py plus ``ev_f``).
SINGLE = {"ev_w": "window, close", "ev_u": "window, updates", "ev_q": "qre every",
          "ev_t": "qre changes", "ev_f": "qre final"}
SPJ = {"ev_join": "spj bounded", "ev_below": "spj allowed unbounded"}
PLANS = [None, "rows:7", "time:5s"]


def rows(replay: Replay, run_id: str, table: str) -> list[tuple]:
    frame = replay.storage.read_arrow(replay.warehouse.run_table(run_id, table)).to_pandas()
    return sorted((tuple(r) for r in frame.astype(object).where(frame.notna(), None)
                   .itertuples(index=False)), key=repr)


def state_digest(replay: Replay, query: str, run_id: str) -> str:
    op = operator_for(replay.catalog.query(query), replay.catalog.recordings)
    table = replay.storage.read_arrow(replay.warehouse.run_table(run_id, "state"))
    return op.state_codec.digest(op.state_codec.decode(table))


def assert_same_as_fresh(replay: Replay, query: str, run_id: str, plan: str | None) -> None:
    """The continued run's tables and final state equal a fresh replay's at the last version,
    and the continued run validates against the reference."""
    fresh = replay.prepare(query, plan=plan, run_id="fresh")
    replay.run(fresh)
    assert replay.manifest(run_id).num_rows == fresh.batches + 1
    for table in ("output", "late", "quarantine"):
        assert rows(replay, run_id, table) == rows(replay, "fresh", table), table
    assert state_digest(replay, query, run_id) == state_digest(replay, query, "fresh")
    report = validate_run(replay, replay.catalog, run_id)
    assert report.ok, (report.diff, report.late_mismatch, report.reconciles)


def continue_commit_by_commit(replay: Replay, query: str, plan: str | None,
                              commits: list[dict[str, pa.Table]]) -> str:
    """Write each commit and continue the query's run; the run id (one run all along)."""
    run_ids = set()
    for tables in commits:
        for name, table in tables.items():
            replay.storage.write(table, replay.warehouse.recording(name), mode="append")
        result = continue_query(replay, query, plan=plan, log=lambda line: None)
        assert result.fresh_reason in ("", "no completed run"), result.fresh_reason
        run_ids.add(result.info.run_id)
    assert len(run_ids) == 1
    return run_ids.pop()


def split(n: int, fractions: list[float]) -> list[int]:
    """Commit boundaries (row positions) of ``n`` rows from fractions in [0, 1]."""
    return [0, *sorted(int(f * n) for f in fractions), n]


@pytest.mark.parametrize("engine", ["spark", "driver"])
@pytest.mark.parametrize("query", list(SINGLE))
@settings(max_examples=2, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(n=st.integers(1, 90), seed=st.integers(0, 10_000),
       fractions=st.lists(st.floats(0, 1), min_size=1, max_size=2),
       plan=st.sampled_from(PLANS))
def test_continuing_commit_by_commit_equals_a_fresh_replay(spark, storage, query, engine, n,
                                                           seed, fractions, plan):
    root = Path(tempfile.mkdtemp(prefix="reprise-cont-"))
    small_catalog(root / "schemas")
    (root / "schemas" / "queries" / "ev_f.yaml").write_text(FINAL_QUERY)
    replay = Replay(spark, storage, Warehouse(root / "warehouse"), load_catalog(root / "schemas"),
                    engine=engine)
    table = events_table(np.random.default_rng(seed), n)
    bounds = split(n, fractions)
    commits = [{"ev": table.slice(a, b - a)} for a, b in itertools.pairwise(bounds)]
    run_id = continue_commit_by_commit(replay, query, plan, commits)
    assert_same_as_fresh(replay, query, run_id, plan)


def time_ordered(table: pa.Table) -> pa.Table:
    """``table`` without rows lacking a time, in event-time order (a recording appended in time
    order: each commit's events come after the merged input's)."""
    table = table.filter(pc.is_valid(table["ts"]))
    return table.take(pc.sort_indices(table, [("ts", "ascending")]))


@pytest.mark.parametrize("engine", ["spark", "driver"])
@pytest.mark.parametrize("query", list(SPJ))
@settings(max_examples=2, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(n=st.integers(4, 90), seed=st.integers(0, 10_000),
       fractions=st.lists(st.floats(0.05, 0.95), min_size=1, max_size=2),
       plan=st.sampled_from([None, "rows:7"]))
def test_spj_continuation_appends_to_the_merged_input_and_equals_a_fresh_replay(
        spark, storage, query, engine, n, seed, fractions, plan):
    root = Path(tempfile.mkdtemp(prefix="reprise-cont-spj-"))
    catalog = spj_catalog(root / "schemas", allow_unbounded=True)
    replay = Replay(spark, storage, Warehouse(root / "warehouse"), catalog, engine=engine)
    rng = np.random.default_rng(seed)
    ev, lk = time_ordered(events_table(rng, n)), lookup_table(rng, max(2, n // 4))
    ts = np.concatenate([ev["ts"].cast(pa.int64()).to_numpy(), lk["ts"].cast(pa.int64())
                         .to_numpy()])
    edges = [ts.min() - 1, *sorted(np.quantile(ts, fractions).astype("int64")), ts.max()]
    commits = []
    for lo, hi in itertools.pairwise(edges):
        part = {}
        for name, t in (("ev", ev), ("lk", lk)):
            times = t["ts"].cast(pa.int64())
            part[name] = t.filter(pc.and_(pc.greater(times, lo), pc.less_equal(times, hi)))
        commits.append(part)
    run_id = continue_commit_by_commit(replay, query, plan, commits)
    assert_same_as_fresh(replay, query, run_id, plan)


def test_a_continuation_reads_as_much_of_the_logs_with_many_segments_as_with_few(
        spark, storage, monkeypatch):
    """Per continuation: the same number of JSON log entries read (the orphan scan and the
    new input files read the new log entries only) and of Delta table opens, but for the run
    tables the previous continuation checkpointed (opened again from their checkpoint), the
    recording's history read for the new versions only; the run's tables get checkpoints, and
    the run still equals a fresh replay."""
    import deltalake

    import jobs.runs.lifecycle

    root = Path(tempfile.mkdtemp(prefix="reprise-cont-"))
    small_catalog(root / "schemas")
    replay = Replay(spark, storage, Warehouse(root / "warehouse"), load_catalog(root / "schemas"))
    monkeypatch.setattr(jobs.runs.lifecycle, "CHECKPOINT_EVERY", 5)
    table = events_table(np.random.default_rng(7), 80)
    counts: dict[str, int] = {}
    opened, read_text, history = deltalake.DeltaTable.__init__, Path.read_text, \
        deltalake.DeltaTable.history

    def counting_open(self, *args, **kwargs):
        counts["opens"] = counts.get("opens", 0) + 1
        opened(self, *args, **kwargs)

    def counting_read(self, *args, **kwargs):
        if self.parent.name == "_delta_log" and self.name.endswith(".json"):
            counts["log entries"] = counts.get("log entries", 0) + 1
        return read_text(self, *args, **kwargs)

    def limited_history(self, limit=None):
        counts["full history"] = counts.get("full history", 0) + (limit is None)
        return history(self, limit)

    monkeypatch.setattr(deltalake.DeltaTable, "__init__", counting_open)
    monkeypatch.setattr(Path, "read_text", counting_read)
    monkeypatch.setattr(deltalake.DeltaTable, "history", limited_history)
    per_continuation = []
    for i in range(10):
        replay.storage.write(table.slice(i * 8, 8), replay.warehouse.recording("ev"),
                             mode="append")
        counts.clear()
        result = continue_query(replay, "ev_w", log=lambda line: None)
        per_continuation.append(dict(counts))
    assert result.segment is not None and result.segment["segment"] == 9
    steady = {k: v for k, v in per_continuation[2].items() if k != "opens"}
    assert all({k: v for k, v in c.items() if k != "opens"} == steady
               for c in per_continuation[2:]), per_continuation
    # (none at all when the storage's memos hold every table a continuation reads)
    assert all(c.get("opens", 0) <= 1 + 5 for c in per_continuation[1:]), per_continuation
    assert not any(c.get("full history") for c in per_continuation[1:])
    run_id = result.info.run_id
    for kind in ("output", "state", "manifest"):
        log = Path(replay.warehouse.run_table(run_id, kind).removeprefix("file://")) / "_delta_log"
        last = json.loads((log / "_last_checkpoint").read_text())["version"]
        assert max(int(p.stem) for p in log.glob("*.json")) - last < 5, kind
    assert_same_as_fresh(replay, "ev_w", run_id, None)


def test_a_continuation_reads_each_new_log_entry_of_its_recording_once(spark, storage,
                                                                        monkeypatch):
    """The commits a continuation reads of its recording serve the append-only check, the
    rearranged files and the new files alike: each new log entry is read once."""
    import jobs.storage.delta_log

    root = Path(tempfile.mkdtemp(prefix="reprise-cont-"))
    small_catalog(root / "schemas")
    replay = Replay(spark, storage, Warehouse(root / "warehouse"), load_catalog(root / "schemas"))
    table = events_table(np.random.default_rng(3), 60)
    recording = replay.warehouse.recording("ev")
    replay.storage.write(table.slice(0, 30), recording, mode="append")
    first = continue_query(replay, "ev_w", log=lambda line: None)
    for part in (table.slice(30, 20), table.slice(50, 10)):
        replay.storage.write(part, recording, mode="append")
    reads: dict[str, int] = {}
    read = jobs.storage.delta_log.read_log_file

    def counted(path: str) -> bytes:
        if path.startswith(f"{recording.removeprefix('file://')}/_delta_log/"):
            reads[path.rsplit("/", 1)[1]] = reads.get(path.rsplit("/", 1)[1], 0) + 1
        return read(path)

    monkeypatch.setattr(jobs.storage.delta_log, "read_log_file", counted)
    result = continue_query(replay, "ev_w", log=lambda line: None)
    assert result.info.run_id == first.info.run_id and not result.fresh_reason
    assert reads == {f"{v:020d}.json": 1 for v in (1, 2)}, reads
    assert_same_as_fresh(replay, "ev_w", result.info.run_id, None)


@pytest.mark.parametrize(("engine", "on_spark"), [("spark", True), ("auto", False)])
def test_engine_spark_runs_a_continuation_on_spark_too(spark, storage, monkeypatch, engine,
                                                       on_spark):
    """A continuation's few new events run in the driver by the estimate, even with a session
    up (its start is paid), and on Spark when Spark is forced."""
    from jobs.runs import replay as replay_module
    from jobs.settings import Settings

    root = Path(tempfile.mkdtemp(prefix="reprise-cont-local-"))
    small_catalog(root / "schemas")
    replay = Replay(spark, storage, Warehouse(root / "warehouse"), load_catalog(root / "schemas"),
                    settings=Settings(engine=engine))
    table = events_table(np.random.default_rng(3), 40)
    continue_commit_by_commit(replay, "ev_w", None, [{"ev": table.slice(0, 30)}])
    used: list[bool] = []
    execute = replay_module.execute_direct
    monkeypatch.setattr(replay_module, "execute_direct", lambda s, *a: used.append(
        s is not None) or execute(s, *a))
    continue_commit_by_commit(replay, "ev_w", None, [{"ev": table.slice(30, 10)}])
    assert used and set(used) == {on_spark}

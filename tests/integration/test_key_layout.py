"""The key-hash layout of recordings: a bucket's task reads only its keys' row groups, outputs
are those of a recording without the layout, and ``reprise optimize`` rewrites a recording into
it without changing any replay (continued runs included)."""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import events_table, small_catalog, write_commits
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_continuation import assert_same_as_fresh, rows
from test_replay import output_rows
from test_select_replay import GLOBAL, SELECT
from typer.testing import CliRunner

from engine.catalog import load_catalog
from jobs.cli.app import app
from jobs.execution.arrival import input_index
from jobs.execution.direct_exchange import task_groups
from jobs.execution.input_files import read_range
from jobs.recordings.layout import layout_key
from jobs.recordings.optimize import optimize_recording
from jobs.recordings.store import generate_recording
from jobs.runs.continuation import continue_query
from jobs.runs.replay import Replay
from jobs.settings import Settings
from jobs.warehouse import Warehouse

#: Queries of every single-input family over recording ``ev``.
QUERIES = ["ev_w", "ev_q", "ev_s", "ev_d", "ev_sel", "ev_all"]


def make_replay(spark, storage, table: pa.Table, commits: int) -> Replay:
    """A runner over recording ``ev`` written as ``commits`` plain appends (not in the layout)."""
    root = Path(tempfile.mkdtemp(prefix="reprise-layout-"))
    small_catalog(root / "schemas")
    (root / "schemas" / "queries" / "ev_sel.yaml").write_text(SELECT)
    (root / "schemas" / "queries" / "ev_all.yaml").write_text(GLOBAL)
    warehouse = Warehouse(root / "warehouse")
    write_commits(storage, warehouse.recording("ev"), table, commits)
    return Replay(spark, storage, warehouse, load_catalog(root / "schemas"))


def arrival(replay: Replay) -> list:
    """Recording ``ev``'s rows at its latest version in arrival order, as a replay numbers them."""
    path = replay.warehouse.recording("ev")
    files = [asdict(f) for f in input_index(replay.storage, path, replay.storage.version(path))]
    parts = read_range(files, ["k", "ts", "v"], [], 0, 2**62)
    assert np.concatenate([[], *(p.seq for p in parts)]).tolist() == list(range(sum(
        f["rows"] for f in files)))
    return [row for p in parts for row in p.table.to_pylist()]


def optimized(replay: Replay) -> int:
    """Optimize recording ``ev``; the rearranging version."""
    done = optimize_recording(replay.storage, replay.warehouse, replay.catalog.recording("ev"))
    assert done.version is not None
    return done.version


def with_settings(replay: Replay, **given) -> Replay:
    return dataclasses.replace(replay, settings=Settings(**given))


def many_keys(n: int, keys: int, seed: int) -> pa.Table:
    """``n`` events over ``keys`` keys (the helpers' table has 4)."""
    table = events_table(np.random.default_rng(seed), n)
    names = np.array([f"key{i:04d}" for i in range(keys)], dtype=object)
    return table.set_column(0, "k", pa.array(names[np.arange(n) % keys]))


def test_generate_writes_the_layout_and_keeps_the_arrival_order(spark, backend_storage,
                                                               tmp_path):
    storage = backend_storage  # (each backend in turn)
    catalog = load_catalog(Path(__file__).resolve().parents[2] / "schemas")
    warehouse = Warehouse(tmp_path / "wh")
    generate_recording(storage, warehouse, catalog, "vitals", keys=40, events=3000, seed=4,
                       commits=3)
    path = warehouse.recording("vitals")
    files = input_index(storage, path, storage.version(path))
    spec = catalog.recording("vitals")
    assert len(files) == 3 and all(layout_key(f.uri) == spec.key for f in files)
    assert all(pq.ParquetFile(f.uri).metadata.num_row_groups > 1 for f in files)
    from jobs.recordings.generators import generate

    expected = pa.concat_tables(generate("vitals", keys=40, events=3000, seed=4, commits=3
                                         ).commits).column(spec.key).to_pylist()
    parts = read_range([asdict(f) for f in files], [spec.key], [], 0, 3000)
    assert [k for p in parts for k in p.table.column(spec.key).to_pylist()] == expected
    assert storage.read_arrow(path).schema.names == list(spec.columns)  # no layout columns
    generate_recording(storage, warehouse, catalog, "vitals", keys=40, events=2000, seed=5,
                       commits=2, replace=True)
    files = input_index(storage, path, storage.version(path))
    assert [f.rows for f in files] == [1000, 1000]  # (the replaced files are gone)


#: A parameter whose delta-spark leg runs with the slow tests (tests/conftest.py).
DELTA_SPARK_SLOW = pytest.mark.delta_spark_slow


@pytest.mark.parametrize("buckets", [pytest.param(2, marks=DELTA_SPARK_SLOW), 8,
                                     pytest.param(32, marks=DELTA_SPARK_SLOW)])
def test_bucket_tasks_read_the_range_once_in_the_layout(spark, backend_storage, buckets):
    """Input bytes the tasks read (``run.json``'s ``input_bytes``) are the range's bytes within
    10 % whatever the bucket count; without the layout every task (one per group of buckets:
    ``task_groups``) reads the whole range; the run's state is a file per task whatever the
    bucket count (the delta-spark leg runs with 8 buckets, and with all three among the slow
    tests)."""
    storage = backend_storage  # (each backend in turn)
    replay = make_replay(spark, storage, many_keys(6000, 500, seed=buckets), commits=3)
    replay.engine = "spark"
    replay = with_settings(replay, exchange="direct", buckets=buckets)
    plain = replay.prepare("ev_w", plan="rows:1500", run_id="plain")
    replay.run(plain)
    optimized(replay)
    laid = replay.prepare("ev_w", plan="rows:1500", run_id="laid")
    replay.run(laid)
    path = replay.warehouse.recording("ev")

    def size(files: list[dict]) -> int:  # every column chunk of every row group, once
        metas = [pq.ParquetFile(f["uri"]).metadata for f in files]
        return sum(m.row_group(g).column(c).total_compressed_size for m in metas
                   for g in range(m.num_row_groups) for c in range(m.num_columns))

    laid_size = size([asdict(f) for f in input_index(replay.storage, path,
                                                     replay.storage.version(path))])
    assert laid_size * 0.9 <= replay_info(replay, "laid").input_bytes <= laid_size * 1.1
    plain_read = replay_info(replay, "plain").input_bytes
    tasks = len(task_groups(spark, buckets))
    assert 1 < tasks <= buckets
    assert plain_read >= size(plain.files) * tasks * 0.9  # (each task read everything)
    # a state file per task's group of buckets, not per bucket
    state = replay.storage.live_files(replay.warehouse.run_table("laid", "state"))
    assert len(state) == tasks
    assert output_rows(replay, "laid") == output_rows(replay, "plain")


def replay_info(replay: Replay, run_id: str):
    from jobs.runs.run_info import read_run

    return read_run(replay.warehouse, run_id)


def assert_layout_keeps_outputs(spark, storage, exchange: str, n: int, commits: int, seed: int,
                                cuts: list[int], buckets: int) -> None:
    """Every family, the batch plan ``cuts``, Spark tasks: a replay of ``n`` events in
    ``commits`` commits in the layout (``optimize``) writes the tables a replay of them without
    the layout wrote."""
    replay = make_replay(spark, storage, many_keys(n, 30, seed), commits)
    replay.engine = "spark"
    replay = with_settings(replay, exchange=exchange, buckets=buckets)
    replay.batches_per_job = 2  # (later jobs read the events before their range: derived lag)
    plan = "cuts:" + ",".join(map(str, sorted({min(c, n) for c in [0, *cuts, n]})))
    before = arrival(replay)
    for query in QUERIES:
        replay.run(replay.prepare(query, plan=plan, run_id=f"{query}-plain"))
    optimized(replay)
    assert arrival(replay) == before
    for query in QUERIES:
        replay.run(replay.prepare(query, plan=plan, run_id=f"{query}-laid"))
        for table in ("output", "late", "quarantine"):
            assert rows(replay, f"{query}-laid", table) == rows(replay, f"{query}-plain",
                                                                  table), (query, table)


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(n=st.integers(1, 150), commits=st.integers(1, 3), seed=st.integers(0, 10_000),
       cuts=st.lists(st.integers(0, 150), max_size=4), buckets=st.sampled_from([1, 2, 3, 8]))
@pytest.mark.delta_spark_slow
@pytest.mark.parametrize("exchange", ["direct", "spark"])
def test_outputs_are_the_same_with_and_without_the_layout(spark, backend_storage, exchange, n,
                                                          commits, seed, cuts, buckets):
    """Random recordings, batch plans and bucket counts (see
    :func:`assert_layout_keeps_outputs`; the delta-spark legs run with the slow tests, the next
    test is their instance in every run)."""
    assert_layout_keeps_outputs(spark, backend_storage, exchange, n, commits, seed, cuts,
                                buckets)


@pytest.mark.delta_spark
def test_outputs_are_the_same_with_and_without_the_layout_on_delta_spark(spark,
                                                                         delta_spark_storage):
    """One instance of the law above on delta-spark: three commits, three batches of uneven
    size, three buckets, the direct exchange."""
    assert_layout_keeps_outputs(spark, delta_spark_storage, "direct", n=120, commits=3, seed=5,
                                cuts=[40, 95], buckets=3)


@pytest.mark.parametrize("query", ["ev_w", "ev_q"])
def test_a_run_continues_over_an_optimize(spark, backend_storage, query):
    """A run pinned before ``optimize`` continues to versions after it (its known files are
    the rewritten ones, at the same offsets) and equals a fresh replay."""
    storage = backend_storage  # (each backend in turn)
    table = many_keys(240, 12, seed=3)
    replay = make_replay(spark, storage, table.slice(0, 120), commits=2)
    first = continue_query(replay, query, plan="rows:25", log=lambda line: None)
    write_commits(replay.storage, replay.warehouse.recording("ev"), table.slice(120, 60), 1)
    optimized(replay)
    write_commits(replay.storage, replay.warehouse.recording("ev"), table.slice(180, 60), 1)
    again = continue_query(replay, query, plan="rows:25", log=lambda line: None)
    assert again.fresh_reason == "" and again.info.run_id == first.info.run_id
    path = replay.warehouse.recording("ev")
    live = {f.path for f in replay.storage.live_files(path)}
    assert {f["uri"] for f in again.info.files} == live  # (the run names the live files)
    assert_same_as_fresh(replay, query, first.info.run_id, "rows:25")


def test_optimize_command(spark, backend_storage, tmp_path, monkeypatch):
    """``reprise optimize``: one commit (a replay before it notes the files not in the layout,
    one after it does not), then nothing to do; an unknown recording is one error line and exit
    1."""
    storage = backend_storage  # (each backend in turn)
    replay = make_replay(spark, storage, many_keys(300, 20, seed=1), commits=2)
    args = ["--warehouse", str(replay.warehouse.root), "--catalog",
            str(Path(replay.warehouse.root).parent / "schemas")]
    runner = CliRunner()
    monkeypatch.setenv("REPRISE_BUCKETS", "2")
    monkeypatch.setenv("REPRISE_EXCHANGE", "direct")
    replayed = runner.invoke(app, ["replay", "ev_w", "--engine", "driver", "--run-id", "before",
                                   *args])
    assert replayed.exit_code == 0, replayed.output
    assert "not in the key-hash layout" in replayed.output
    assert "reprise optimize ev" in replayed.output
    result = runner.invoke(app, ["optimize", "ev", *args])
    assert result.exit_code == 0, result.output
    assert "rewrote 2 files" in result.output
    replayed = runner.invoke(app, ["replay", "ev_w", "--engine", "driver", "--run-id", "after",
                                   *args])
    assert replayed.exit_code == 0 and "key-hash layout" not in replayed.output, replayed.output
    result = runner.invoke(app, ["optimize", "ev", *args])
    assert result.exit_code == 0 and "nothing to do" in result.output, result.output
    result = runner.invoke(app, ["optimize", "nope", *args])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "nope" in lines[0], lines

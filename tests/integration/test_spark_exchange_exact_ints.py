"""On the ``spark`` exchange int values beyond 2^53 next to nulls reach the operator exact (the
workers receive Arrow tables, not Spark's float64 pandas conversion): a select query's output
carries them unchanged and a window's int sums and firsts are exact, row for row the same as with
the ``direct`` exchange, and the runs validate. Both Spark jobs of the exchange are covered: a
group of batches, and the last group with the end-of-input flush (cogrouped with every bucket)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
from helpers import small_catalog, write_commits

from engine.catalog import load_catalog
from jobs.runs.replay import Replay
from jobs.runs.validate import validate_run
from jobs.warehouse import Warehouse

SELECT = """\
name: ev_sel
kind: select
input: ev
query:
  columns: [ts, v, k]
"""
FIRSTS = """\
name: ev_f
kind: window
input: ev
lateness: 3s
query:
  window: {type: tumbling, size: 5s}
  aggregates:
    n: count()
    s: sum(v)
    first_v: first(v)
    last_v: last(v)
    top: argmax(v, v)
"""
BIG = 2**62 + 1  # float64 holds it as 2^62
VALUES = {"a": [BIG, None, -(2**61) - 3, 2**53 + 1],
          "b": [-(2**62) - 5, None, 2**53 + 1, -(2**53) - 1],
          "c": [None, None, None, None]}


def _rows(replay: Replay, run_id: str, columns: list[str]) -> list[tuple]:
    output = replay.storage.read_arrow(replay.warehouse.run_table(run_id, "output"))
    return sorted(zip(*(output.column(c).to_pylist() for c in columns), strict=True),
                  key=repr)


def test_spark_exchange_keeps_ints_beyond_2_53_with_nulls_exact(spark, storage):
    root = Path(tempfile.mkdtemp(prefix="reprise-spark-ints-"))
    small_catalog(root / "schemas")
    (root / "schemas" / "queries" / "ev_sel.yaml").write_text(SELECT)
    (root / "schemas" / "queries" / "ev_f.yaml").write_text(FIRSTS)
    catalog = load_catalog(root / "schemas")
    warehouse = Warehouse(root / "warehouse")
    start = 1_700_000_000_000_000  # a multiple of the 5 s window
    keys = [k for i in range(4) for k in VALUES]  # keys interleaved in arrival order
    values = [VALUES[k][i] for i in range(4) for k in VALUES]
    table = pa.table({
        "k": pa.array(keys),
        "ts": pa.array([start + i for i in range(len(keys))], pa.int64()).cast(
            pa.timestamp("us", tz="UTC")),
        "v": pa.array(values, pa.int64())})
    write_commits(storage, warehouse.recording("ev"), table, 2)
    runs: dict[tuple[str, str], list[tuple]] = {}
    for exchange in ("spark", "direct"):
        # two jobs: batches 0-1 (a grouped job), then batch 2 with the flush (a cogroup job)
        replay = Replay(spark, storage, warehouse, catalog, exchange=exchange, batches_per_job=2)
        for query, columns in (("ev_sel", ["k", "ts", "v"]),
                               ("ev_f", ["k", "n", "s", "first_v", "last_v", "top"])):
            info = replay.prepare(query, plan="rows:5", run_id=f"{query}-{exchange}")
            assert info.exchange == exchange
            replay.run(info)
            report = validate_run(replay, catalog, info.run_id)
            assert report.ok, report.diff
            runs[query, exchange] = _rows(replay, info.run_id, columns)
    for query in ("ev_sel", "ev_f"):
        assert runs[query, "spark"] == runs[query, "direct"], query
    assert sorted(v for _, _, v in runs["ev_sel", "spark"] if v is not None) == sorted(
        v for v in values if v is not None)
    by_key = {row[0]: row[1:] for row in runs["ev_f", "spark"]}
    assert by_key == {
        "a": (4, BIG - 2**61 - 3 + 2**53 + 1, BIG, 2**53 + 1, BIG),
        "b": (4, -(2**62) - 5 + 2**53 + 1 - 2**53 - 1, -(2**62) - 5, -(2**53) - 1, 2**53 + 1),
        "c": (4, None, None, None, None)}

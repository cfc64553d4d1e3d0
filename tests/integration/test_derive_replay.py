"""Derived columns computed in the bucket workers (direct exchange) vs by Spark SQL."""

from __future__ import annotations

import dataclasses

from helpers import DERIVED_QUERY
from test_replay import make_replay

from engine.catalog import load_catalog


def table_rows(replay, run_id: str, kind: str) -> list[tuple]:
    path = replay.warehouse.run_table(run_id, kind)
    if not replay.storage.exists(path):
        return []
    frame = replay.storage.read_arrow(path).to_pandas().drop(columns=["batch"], errors="ignore")
    return sorted(map(repr, frame.astype(object).where(frame.notna(), None)
                      .itertuples(index=False)))


def test_workers_compute_derived_columns_as_spark_sql_does(spark, storage):
    """``ev_d`` (a lag over arrival order) on the direct exchange, several jobs of 2 batches
    (each worker steps the evaluator over its bucket's earlier events first), equals the run
    whose derived column Spark SQL computes: output, late and quarantined rows (which carry the
    derived value)."""
    replay = make_replay(spark, storage, n=160, commits=3, seed=21)
    runs = {}
    for exchange in ("direct", "spark"):
        runner = dataclasses.replace(replay, exchange=exchange, batches_per_job=2)
        info = runner.prepare("ev_d", plan="rows:17", run_id=f"d-{exchange}")
        assert info.exchange == exchange
        runner.run(info)
        runs[exchange] = {kind: table_rows(runner, info.run_id, kind)
                          for kind in ("output", "late", "quarantine")}
    assert runs["direct"] == runs["spark"]
    assert runs["direct"]["output"] and runs["direct"]["quarantine"]


def test_derived_columns_the_workers_cannot_compute_keep_spark(spark, storage):
    """``lead`` needs later events, and ``ev``'s events do not arrive in ``ts`` order within a
    key (so ``ORDER BY ts, __seq`` is not arrival order): both runs use the spark exchange."""
    replay = make_replay(spark, storage, n=60, commits=1, seed=4)
    root = replay.catalog.root
    for name, sql in (("ev_lead", "lead(v) over (partition by k order by __seq)"),
                      ("ev_ts", "v - lag(v) over (partition by k order by ts, __seq)"),
                      ("ev_seq", "v - lag(v) over (partition by k order by __seq)")):
        text = DERIVED_QUERY.replace("name: ev_d", f"name: {name}").replace(
            "v - lag(v) over (partition by k order by __seq)", sql)
        (root / "queries" / f"{name}.yaml").write_text(text)
    runner = dataclasses.replace(replay, catalog=load_catalog(root))
    chosen = {name: runner.prepare(name, plan="commit").exchange
              for name in ("ev_lead", "ev_ts", "ev_seq")}
    assert chosen == {"ev_lead": "spark", "ev_ts": "spark", "ev_seq": "direct"}

"""Replays on Spark of the query model around the operators: a select query with ``where:``,
and a global window (``key: none``) with ``where:`` and ``having:``; each validates against its
reference and reconciles (filtered events count as processed), under two batch plans."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from helpers import events_table, small_catalog, write_commits

from engine.catalog import load_catalog
from jobs.runs.replay import Replay
from jobs.runs.validate import reconcile_run, validate_run
from jobs.warehouse import Warehouse

SELECT = """\
name: ev_sel
kind: select
input: ev
where: v < 30 OR v IS NULL AND k IN ('a', 'b')
query:
  columns: [ts, v, k]
"""
GLOBAL = """\
name: ev_all
kind: window
input: ev
key: none
lateness: 3s
where: NOT v BETWEEN 40 AND 60
query:
  window: {type: tumbling, size: 5s}
  aggregates: {n: count(), s: sum(v), hi: max(v)}
  having: n >= 3 AND hi > 50
"""


def test_select_and_global_window_replays_validate_and_reconcile(spark, storage):
    root = Path(tempfile.mkdtemp(prefix="reprise-select-"))
    small_catalog(root / "schemas")
    (root / "schemas" / "queries" / "ev_sel.yaml").write_text(SELECT)
    (root / "schemas" / "queries" / "ev_all.yaml").write_text(GLOBAL)
    catalog = load_catalog(root / "schemas")
    warehouse = Warehouse(root / "warehouse")
    table = events_table(np.random.default_rng(5), 150)
    write_commits(storage, warehouse.recording("ev"), table, 3)
    replay = Replay(spark, storage, warehouse, catalog)
    outputs = {}
    for query in ("ev_sel", "ev_all"):
        for plan in ("commit", "rows:17"):
            info = replay.prepare(query, plan=plan, run_id=f"{query}-{plan.replace(':', '')}")
            replay.run(info)
            report = validate_run(replay, catalog, info.run_id)
            assert report.ok, (report.diff, report.late_mismatch, report.reconciles)
            counts = reconcile_run(replay, info.run_id)
            assert counts.ok and counts.input_rows == 150
            output = storage.read_arrow(warehouse.run_table(info.run_id, "output")).to_pandas()
            outputs[query, plan] = output.drop(columns=["batch"]).sort_values(
                list(output.columns.drop("batch"))).reset_index(drop=True)
            assert 0 < len(output) < 150
        assert outputs[query, "commit"].equals(outputs[query, "rows:17"])
    selected = outputs["ev_sel", "commit"]
    assert list(selected.columns) == ["ts", "v", "k", "arrival_seq"]
    assert ((selected["v"] < 30) | selected["v"].isna()).all()
    windows = outputs["ev_all", "commit"]
    assert list(windows.columns[:2]) == ["window_start", "window_end"]  # no key column
    assert (windows["n"] >= 3).all() and (windows["hi"] > 50).all()

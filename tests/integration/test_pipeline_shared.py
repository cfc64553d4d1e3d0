"""Several pipeline stages over one upstream replayed together share its stream as queries on a
recording do: the upstream runs once, its output is read once, and the stages run as one shared
pass, each with its own run (the id of its standalone replay), tables and validation."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from helpers import events_table, write_commits
from test_pipeline_replay import pipeline_catalog
from typer.testing import CliRunner

from engine.catalog import load_catalog
from jobs.cli.app import app
from jobs.runs.pipeline_stage import upstream_read
from jobs.runs.replay import Replay
from jobs.runs.validate import reconcile_run, validate_run
from jobs.shared.shared_run import SharedReplay
from jobs.shared.standalone_compare import COMPARED, table_rows
from jobs.warehouse import Warehouse

#: A third stage over ``ev_w`` with a ``where:`` the shared plan widens to the scan's predicate.
BUSY = """\
name: ev_w_busy
kind: select
input: {query: ev_w}
where: n > 3 OR hi IS NULL
query: {columns: [k, window_end, n, hi]}
"""
STAGES = ["ev_w_max", "ev_w_alert", "ev_w_busy"]


def two_warehouses(spark, storage, seed: int, events: int) -> tuple[Replay, Replay]:
    """Replays of the pipeline catalog over two warehouses holding the same recording."""
    root = Path(tempfile.mkdtemp(prefix="reprise-pipeshare-"))
    catalog_dir = root / "schemas"
    pipeline_catalog(catalog_dir)
    (catalog_dir / "queries" / "ev_w_busy.yaml").write_text(BUSY)
    catalog = load_catalog(catalog_dir)
    table = events_table(np.random.default_rng(seed), events)
    replays = []
    for side in ("shared", "alone"):
        warehouse = Warehouse(root / side)
        write_commits(storage, warehouse.recording("ev"), table, 3)
        replays.append(Replay(spark, storage, warehouse, catalog))
    return replays[0], replays[1]


def test_stages_over_one_upstream_read_it_once_and_equal_their_standalone_runs(spark, storage):
    shared_side, alone = two_warehouses(spark, storage, seed=5, events=500)
    shared = SharedReplay(shared_side)
    infos = shared.prepare(STAGES, plan="rows:41")
    assert shared.upstream_reads == 1
    plan, on_own = shared.plan(infos)
    assert plan is not None and on_own == []
    shared.run(infos)
    assert shared.tasks >= 1
    # every stage read the same upstream run at the same output version: one read
    reads = {upstream_read(shared_side, info) for info in infos}
    assert len(reads) == 1 and None not in next(iter(reads))
    standalone = []
    for name in STAGES:  # the first fuses with the upstream, the others reuse its run
        info = alone.prepare(name, plan="rows:41")
        alone.run(info)
        standalone.append(info.run_id)
    assert [i.run_id for i in infos] == standalone
    for run_id in standalone:
        for kind in COMPARED:
            pd.testing.assert_frame_equal(table_rows(shared_side, run_id, kind),
                                          table_rows(alone, run_id, kind), check_dtype=False)
        counts = ["rows_in", "rows_out", "late", "quarantined"]
        assert (shared_side.manifest(run_id).to_pandas()[counts].values.tolist()
                == alone.manifest(run_id).to_pandas()[counts].values.tolist())
        # against its reference over the upstream's output, and the composed one over `ev`
        report = validate_run(shared_side, shared_side.catalog, run_id)
        assert report.ok and report.chain is not None, (run_id, report.diff, report.chain)
        assert reconcile_run(shared_side, run_id).ok
    assert len(table_rows(shared_side, standalone[2], "output")), "the busy stage kept rows"
    # a second shared replay reuses every run without reading the upstream's output again
    again = SharedReplay(shared_side)
    assert [i.run_id for i in again.prepare(STAGES, plan="rows:41")] == standalone
    assert again.upstream_reads == 0


def test_replay_of_two_stages_on_the_command_line_is_one_shared_run(spark, storage):
    replay, _ = two_warehouses(spark, storage, seed=2, events=200)
    root = Path(replay.warehouse.root)
    result = CliRunner().invoke(app, ["replay", "ev_w_busy", "ev_w_max", "--catalog",
                                      str(root.parent / "schemas"), "--warehouse", str(root)])
    assert result.exit_code == 0, result.output
    assert "shared run of ev_w_busy, ev_w_max" in result.output
    for name in ("ev_w_busy", "ev_w_max"):
        info = replay.prepare(name)  # (the run the command made, complete)
        assert replay.manifest(info.run_id).num_rows == info.batches + 1

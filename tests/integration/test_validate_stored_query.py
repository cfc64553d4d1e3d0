"""`validate` checks a run against the query definition it was made with, not the catalog's now."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from helpers import QUERY, events_table, small_catalog, write_commits

from engine.catalog import load_catalog
from jobs.runs.replay import Replay
from jobs.runs.run_info import ReplayError
from jobs.runs.validate import validate_run
from jobs.warehouse import Warehouse

EDITS = {
    "aggregates removed": QUERY.replace(", n_v: count(v), s: sum(v)", ""),
    "window changed": QUERY.replace("size: 5s", "size: 7s"),
    "lateness changed": QUERY.replace("lateness: 3s", "lateness: 0s"),
    "aggregate added": QUERY.replace("mean: avg(v)}", "mean: avg(v), top: max(v)}"),
}


@pytest.fixture(scope="module")
def finished_run(spark, storage, tmp_path_factory):
    root = tmp_path_factory.mktemp("stored")
    catalog = small_catalog(root / "schemas")
    warehouse = Warehouse(root / "warehouse")
    write_commits(storage, warehouse.recording("ev"), events_table(np.random.default_rng(5), 90),
                  3)
    replay = Replay(spark, storage, warehouse, catalog)
    info = replay.prepare("ev_w", run_id="r1")
    replay.run(info)
    report = validate_run(replay, catalog, "r1")
    assert report.ok and report.note == ""
    return replay, root


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_validate_uses_the_stored_definition_and_notes_the_changed_file(finished_run, edit):
    replay, root = finished_run
    path = root / "schemas" / "queries" / "ev_w.yaml"
    try:
        path.write_text(EDITS[edit])
        report = validate_run(replay, load_catalog(root / "schemas"), "r1")
    finally:
        path.write_text(QUERY)
    assert report.ok, (report.diff, report.late_mismatch)
    assert report.reference_rows == report.output_rows > 0
    assert str(path) in report.note and "has changed since run r1" in report.note


def test_a_run_of_a_recording_made_again_with_fewer_versions_is_named(spark, backend_storage,
                                                                     tmp_path):
    """The recording was generated again (fewer versions) after the run: validate says which
    version the run read and what the recording has now, not a Delta kernel error."""
    storage = backend_storage  # (each backend in turn)
    catalog = small_catalog(tmp_path / "schemas")
    warehouse = Warehouse(tmp_path / "warehouse")
    path = warehouse.recording("ev")
    write_commits(storage, path, events_table(np.random.default_rng(5), 90), 3)
    replay = Replay(spark, storage, warehouse, catalog)
    replay.run(replay.prepare("ev_w", run_id="old"))
    shutil.rmtree(path)
    write_commits(storage, path, events_table(np.random.default_rng(6), 30), 1)
    with pytest.raises(ReplayError, match=r"run 'old' read version 2 of .*run\.json.*has "
                                          r"versions 0 to 0.*made again"):
        validate_run(replay, catalog, "old")

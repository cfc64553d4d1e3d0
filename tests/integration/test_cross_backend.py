"""Tables written by one Delta backend are read and extended by the other: a recording made by
one is replayed by the other, and a run made by one is continued by the other."""

from __future__ import annotations

import pytest
from test_continuation_crash import later_events
from test_crash import late_rows, output_rows

from jobs.recordings.store import generate_recording
from jobs.runs.continuation import continue_query
from jobs.runs.replay import Replay
from jobs.runs.validate import validate_run
from jobs.runtime.spark_session import delta_jars_loadable
from jobs.storage import open_storage

QUERY = "vitals_hr_1m"
PLAN = "rows:1000"
PAIRS = pytest.mark.parametrize(("first", "then"), [("delta-rs", "delta-spark"),
                                                    ("delta-spark", "delta-rs")])
pytestmark = pytest.mark.delta_spark


@pytest.fixture
def backends(spark):
    """Both backends' storages, by name."""
    if not delta_jars_loadable(spark):
        pytest.skip("Delta jars not loaded (make jars; see jobs/runtime/delta_jars.py)")
    return {name: open_storage(spark, name) for name in ("delta-rs", "delta-spark")}


@PAIRS
def test_a_recording_made_by_one_backend_replays_on_the_other(spark, backends, catalog,
                                                              warehouse, first, then):
    generate_recording(backends[first], warehouse, catalog, "vitals", keys=10, events=4_000,
                       seed=5, commits=3)
    runs = {}
    for name in (first, then):
        replay = Replay(spark, backends[name], warehouse, catalog)
        runs[name] = replay
        replay.run(replay.prepare(QUERY, plan=PLAN, run_id=name))
    reader = runs[then]
    assert validate_run(reader, catalog, then).ok
    assert output_rows(reader, then) == output_rows(reader, first)
    assert late_rows(reader, then) == late_rows(reader, first)


@PAIRS
def test_a_run_continued_with_the_other_backend_equals_one_continued_with_the_same(
        spark, backends, catalog, warehouse, first, then):
    generate_recording(backends[first], warehouse, catalog, "vitals", keys=10, events=4_000,
                       seed=8, commits=2)
    started = Replay(spark, backends[first], warehouse, catalog)
    for run_id in ("switched", "same"):
        started.run(started.prepare(QUERY, plan=PLAN, run_id=run_id))
    backends[then].write(later_events(started), warehouse.recording("vitals"), mode="append")
    switched = Replay(spark, backends[then], warehouse, catalog)
    moved = continue_query(switched, QUERY, run_id="switched", log=lambda line: None)
    kept = continue_query(started, QUERY, run_id="same", log=lambda line: None)
    assert not moved.fresh_reason and moved.info.cuts == kept.info.cuts
    assert output_rows(switched, "switched") == output_rows(started, "same")
    assert late_rows(switched, "switched") == late_rows(started, "same")
    assert validate_run(switched, catalog, "switched").ok


@PAIRS
def test_a_batch_committed_by_one_backend_is_found_by_the_other(backends, tmp_path, first,
                                                                  then):
    """A run resumed on the other backend finds each batch an earlier attempt committed by its
    commit metadata (the version it holds goes into the manifest; a state version of None made
    a resumed window run start from an empty state)."""
    import pyarrow as pa
    from test_storage_contract import stage

    from jobs.runs.run_commits import commit_files
    from jobs.storage import Txn

    path = str(tmp_path / "t")
    rows = pa.table({"n": pa.array([1, 2], pa.int64())})
    made = {}
    for b in range(2):
        meta = {"reprise.run": "r", "reprise.batch": str(b)}
        made[b] = commit_files(backends[first], path, stage(backends[first], path, f"a{b}",
                                                            [rows]),
                               rows.schema, Txn("r/output", b), meta)
    assert made == {0: (0, False), 1: (1, False)}
    again = stage(backends[then], path, "retry", [rows])
    assert commit_files(backends[then], path, again, rows.schema, Txn("r/output", 0),
                        {"reprise.run": "r", "reprise.batch": "0"}) == (0, True)
    assert backends[then].version_with(path, {"reprise.run": "r", "reprise.batch": "1"}) == 1
    history = backends[then].history(path)
    assert [backends[then].commit_metadata(e).get("reprise.batch") for e in history] == ["1",
                                                                                       "0"]

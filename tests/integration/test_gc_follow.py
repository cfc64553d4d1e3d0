"""``reprise gc`` keeps the latest completed run of a query and vacuums it; ``follow`` continues
as versions arrive and stops cleanly on SIGTERM or its bounds."""

from __future__ import annotations

import json
import os
import signal

from test_continuation_crash import later_events

from jobs.recordings.store import generate_recording
from jobs.runs.continuation import continue_query
from jobs.runs.follow import follow
from jobs.runs.gc import collect
from jobs.runs.listing import summarize
from jobs.runs.replay import Replay
from jobs.runs.validate import validate_run

QUERY = "vitals_hr_1m"


def test_gc_removes_superseded_runs_and_vacuums_the_latest(spark, backend_storage, catalog,
                                                          warehouse):
    gc_between_continuations(spark, backend_storage, catalog, warehouse)  # (each backend)


def test_gc_and_continuations_on_an_s3_warehouse(spark, storage, catalog, s3_warehouse):
    gc_between_continuations(spark, storage, catalog, s3_warehouse)


def gc_between_continuations(spark, storage, catalog, warehouse) -> None:
    """Two runs, the later continued; gc removes the older and vacuums the later, which is
    valid and continues again."""
    generate_recording(storage, warehouse, catalog, "vitals", keys=5, events=1_500, seed=6,
                       commits=2)
    replay = Replay(spark, storage, warehouse, catalog)
    old = replay.prepare(QUERY, version=0)
    replay.run(old)
    latest = replay.prepare(QUERY)  # a second run, at v1
    replay.run(latest)
    vitals = warehouse.recording("vitals")
    storage.write(later_events(replay).slice(0, 200), vitals, mode="append")
    continued = continue_query(replay, QUERY, log=lambda line: None)
    assert continued.info.run_id == latest.run_id
    summary = summarize(warehouse, latest.run_id)
    assert summary.segments == 2 and "v1 -> v2" in summary.last_segment
    report = collect(replay)
    assert report.removed == [old.run_id] and report.kept == [latest.run_id]
    assert not warehouse.run_dir(old.run_id).exists()
    assert report.vacuumed[latest.run_id] > 0  # at least the provisional flush files
    assert validate_run(replay, catalog, latest.run_id).ok
    storage.write(later_events(replay).slice(200, 100), vitals, mode="append")
    again = continue_query(replay, QUERY, log=lambda line: None)  # continues after a gc
    assert again.info.run_id == latest.run_id and not again.fresh_reason
    assert validate_run(replay, catalog, latest.run_id).ok


def test_follow_adds_a_segment_per_new_version_and_stops_on_sigterm(spark, backend_storage, catalog,
                                                                    warehouse):
    storage = backend_storage  # (each backend in turn)
    generate_recording(storage, warehouse, catalog, "vitals", keys=5, events=1_000, seed=7,
                       commits=2)
    replay = Replay(spark, storage, warehouse, catalog)
    quiet = follow(replay, QUERY, every_s=0.05, duration_s=0.2, log=lambda line: None)
    assert quiet.stopped_by == "duration" and quiet.segments == 0  # first run made, no segment
    storage.write(later_events(replay).slice(0, 100), warehouse.recording("vitals"),
                  mode="append")
    lines: list[str] = []

    def log(line: str) -> None:
        lines.append(line)
        if "segment 1" in line:
            os.kill(os.getpid(), signal.SIGTERM)  # as a supervisor stopping the follower

    report = follow(replay, QUERY, every_s=0.05, log=log)
    assert report.stopped_by == "signal" and report.segments == 1
    assert any("SIGTERM" in line for line in lines)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # handlers restored
    assert summarize(warehouse, report.run_id).status == "complete"
    bounded = follow(replay, QUERY, every_s=0.05, max_segments=0, log=lambda line: None)
    assert bounded.stopped_by == "max segments"


def test_gc_ranks_runs_of_the_same_versions_by_when_they_were_made(spark, storage, catalog,
                                                                    warehouse):
    # (before, by when run.json was last written: rewriting an older run's file made it the
    # "most recently made")
    generate_recording(storage, warehouse, catalog, "vitals", keys=5, events=800, seed=9,
                       commits=1)
    replay = Replay(spark, storage, warehouse, catalog)
    older = replay.prepare(QUERY, plan="rows:300", run_id="made-first")
    replay.run(older)
    newer = replay.prepare(QUERY, plan="rows:300", run_id="made-second")
    replay.run(newer)
    for run_id, created in (("made-first", "2026-01-01T00:00:00+00:00"),
                            ("made-second", "2026-01-02T00:00:00+00:00")):
        path = warehouse.run_dir(run_id) / "run.json"
        path.write_text(path.read_text().replace(
            json.loads(path.read_text())["created"], created))
    path = warehouse.run_dir("made-first") / "run.json"
    later = (warehouse.run_dir("made-second") / "run.json").stat().st_mtime + 60
    os.utime(path, (later, later))  # written last, made first
    report = collect(replay)
    assert report.removed == ["made-first"] and report.kept == ["made-second"]
    assert summarize(warehouse, "made-second").created == "2026-01-02 00:00:00 UTC"

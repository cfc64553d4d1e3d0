"""A continuation killed with SIGKILL and continued again equals an uninterrupted continuation;
a recording rewritten between two versions is replayed from scratch, with the reason kept."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable
from test_crash import child_env, late_rows, output_rows

from jobs.execution.merged_inputs import merge_inputs
from jobs.recordings.store import generate_recording
from jobs.runs.continuation import continue_query, extend
from jobs.runs.replay import Replay
from jobs.runs.run_info import read_run
from jobs.runs.run_segments import finish_rewind, pending
from jobs.runs.validate import validate_run

PLAN = "rows:1000"
QUERY = "vitals_hr_1m"


def later_events(replay: Replay) -> pa.Table:
    """The recording's events one day later: a commit of new events to append."""
    table = replay.storage.read_arrow(replay.warehouse.recording("vitals"))
    day = pa.scalar(86_400_000_000, pa.duration("us"))
    return table.set_column(table.schema.get_field_index("ts"), "ts",
                            pc.add(table["ts"], day))


@pytest.mark.parametrize("after", [0, 3])
def test_sigkill_during_a_continuation_then_continue_equals_uninterrupted(
        spark, backend_storage, catalog, warehouse, after):
    """Killed before the manifest commit of the group (three batches a group) holding the
    continuation's first new batch (``after`` 0: whose output commit also removed the old
    end-of-input flush's files) or of the next group (3)."""
    storage = backend_storage  # (each backend in turn)
    generate_recording(storage, warehouse, catalog, "vitals", keys=10, events=6_000, seed=4,
                       commits=2)
    replay = Replay(spark, storage, warehouse, catalog)
    for run_id in ("crashy", "straight"):
        replay.run(replay.prepare(QUERY, plan=PLAN, run_id=run_id))
    first_new = replay.prepare(QUERY, run_id="crashy").batches
    storage.write(later_events(replay), warehouse.recording("vitals"), mode="append")
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).parents[1] / "support" / "crash_continue.py"),
         str(warehouse.root), QUERY, "crashy", str(first_new + after)],
        cwd=Path(__file__).resolve().parents[2], env=child_env(warehouse.root),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    assert proc.wait(timeout=300) == -signal.SIGKILL, proc.stdout.read().decode()
    # killed: the run's new batches are partly committed, its manifest behind them
    assert replay.manifest("crashy").num_rows <= first_new + after
    resumed = continue_query(replay, QUERY, run_id="crashy", log=lambda line: None)
    straight = continue_query(replay, QUERY, run_id="straight", log=lambda line: None)
    assert resumed.info.cuts == straight.info.cuts and not resumed.fresh_reason
    assert output_rows(replay, "crashy") == output_rows(replay, "straight")
    assert late_rows(replay, "crashy") == late_rows(replay, "straight")
    batches = replay.manifest("crashy").to_pandas()["batch"].tolist()
    assert batches == list(range(resumed.info.batches + 1))
    assert validate_run(replay, catalog, "crashy").ok
    segments = json.loads((warehouse.run_dir("crashy") / "run.json").read_text())["segments"]
    assert [s["segment"] for s in segments] == [0, 1]
    assert segments[1]["events"] == 6_000 and segments[1]["rewound"]


def test_a_continuation_stopped_after_its_rewind_then_continued_equals_uninterrupted(
        spark, storage, catalog, warehouse):
    """The rewind leaves the old end-of-input flush's output live for the first new batch's
    commit to remove: a continuation stopped in between (rewind done and recorded, no batch
    run) ends with the same tables as one that was not."""
    generate_recording(storage, warehouse, catalog, "vitals", keys=10, events=3_000, seed=6,
                       commits=2)
    replay = Replay(spark, storage, warehouse, catalog)
    for run_id in ("stopped", "straight"):
        replay.run(replay.prepare(QUERY, plan=PLAN, run_id=run_id))
    storage.write(later_events(replay), warehouse.recording("vitals"), mode="append")
    planned = extend(replay, "stopped", log=lambda line: None)
    finish_rewind(replay, planned.info)
    assert not pending(read_run(warehouse, "stopped"))
    flush = replay.storage.read_arrow(replay.warehouse.run_table("stopped", "output"))
    assert planned.segment["first_batch"] in flush.column("batch").to_pylist()  # still live
    resumed = continue_query(replay, QUERY, run_id="stopped", log=lambda line: None)
    straight = continue_query(replay, QUERY, run_id="straight", log=lambda line: None)
    assert resumed.info.cuts == straight.info.cuts
    assert output_rows(replay, "stopped") == output_rows(replay, "straight")
    assert late_rows(replay, "stopped") == late_rows(replay, "straight")
    assert validate_run(replay, catalog, "stopped").ok


def test_rewritten_recording_is_replayed_from_scratch_with_the_reason(
        spark, storage, catalog, warehouse):
    generate_recording(storage, warehouse, catalog, "vitals", keys=10, events=2_000, seed=5,
                       commits=2)
    replay = Replay(spark, storage, warehouse, catalog)
    first = continue_query(replay, QUERY, log=lambda line: None)
    path = warehouse.recording("vitals")
    table = replay.storage.read_arrow(path)
    storage.write(table.slice(0, 1_500), path, mode="overwrite")  # history rewritten
    storage.write(later_events(replay).slice(0, 300), path, mode="append")
    lines: list[str] = []
    result = continue_query(replay, QUERY, log=lines.append)
    assert result.info.run_id != first.info.run_id
    assert "rewritten" in result.fresh_reason and "Overwrite" in result.fresh_reason
    assert any(first.info.run_id in line and "from scratch" in line for line in lines), lines
    stored = json.loads((warehouse.run_dir(result.info.run_id) / "run.json").read_text())
    assert "rewritten" in stored["segments"][0]["note"]
    assert result.info.total == 1_800
    assert validate_run(replay, catalog, result.info.run_id).ok
    # the old run is untouched, still complete at its own version
    assert replay.manifest(first.info.run_id).num_rows == first.info.batches + 1


def test_a_delete_committed_while_a_continuation_pins_its_versions_makes_it_fresh(
        spark, storage, catalog, warehouse):
    """A writer deletes rows of the recording's new events (a file the run never read) while a
    continuation plans its segment, just before it pins the versions it reads: the
    continuation checks exactly the versions it pinned, so it sees the delete and replays
    afresh instead of extending the run over a history that is not append-only."""
    generate_recording(storage, warehouse, catalog, "vitals", keys=10, events=2_000, seed=5,
                       commits=2)
    replay = Replay(spark, storage, warehouse, catalog)
    first = continue_query(replay, QUERY, log=lambda line: None)
    path = warehouse.recording("vitals")
    later = later_events(replay).slice(0, 300)
    storage.write(later, path, mode="append")
    since = pc.min(later["ts"]).as_py().strftime("%Y-%m-%d %H:%M:%S")
    pin, deletes = replay.pin_sources, []

    def deleted_then_pinned(query, version):  # the writer's delete lands just before the pin
        if not deletes:
            deletes.append(DeltaTable(path).delete(f"ts >= '{since}'"))
        return pin(query, version)

    replay.pin_sources = deleted_then_pinned
    result = extend(replay, first.info.run_id, log=lambda line: None)
    assert deletes[0]["num_deleted_rows"] > 0
    assert result.info.run_id != first.info.run_id
    assert "rewritten" in result.fresh_reason and "DELETE" in result.fresh_reason, \
        result.fresh_reason
    assert result.info.input_version == storage.version(path)  # (the fresh run: the delete)


def test_a_recording_generated_again_is_replayed_from_scratch(spark, storage, catalog,
                                                               warehouse):
    """``generate --replace`` commits the new events and removes the old files in one commit
    that its log labels an append (as ``make demo`` run twice does): a continuation of a run
    over the old files replays the query from scratch and says why, instead of failing."""
    generate_recording(storage, warehouse, catalog, "vitals", keys=10, events=2_000, seed=5,
                       commits=2)
    replay = Replay(spark, storage, warehouse, catalog)
    first = continue_query(replay, QUERY, log=lambda line: None)
    generate_recording(storage, warehouse, catalog, "vitals", keys=10, events=1_500, seed=6,
                       commits=2, replace=True)
    lines: list[str] = []
    result = continue_query(replay, QUERY, log=lines.append)
    assert result.info.run_id != first.info.run_id
    assert "rewritten" in result.fresh_reason and "no longer live" in result.fresh_reason
    assert any("from scratch" in line for line in lines), lines
    assert result.info.total == 1_500
    assert validate_run(replay, catalog, result.info.run_id).ok


def test_an_spj_continuation_killed_after_merging_its_input_finishes_at_the_merged_version(
        spark, storage, catalog, warehouse):
    """Killed after the merged input of its new segment was committed and before ``run.json``
    recorded the segment, with a newer recording version since: the next continuation finishes
    the segment at the version the killed one merged (not the newest: the merged input holds
    that one's events), and the one after goes further; each equals a fresh replay."""
    query = "vitals_spo2_histogram"  # spj: its input is merged into the run's own table
    generate_recording(storage, warehouse, catalog, "vitals", keys=10, events=3_000, seed=7,
                       commits=2)
    replay = Replay(spark, storage, warehouse, catalog)
    info = replay.prepare(query, plan=PLAN, run_id="merged")
    replay.run(info)
    path = warehouse.recording("vitals")
    storage.write(later_events(replay), path, mode="append")
    planned = storage.version(path)
    ctx = replay.context(query)
    merge_inputs(storage, warehouse, catalog, ctx.query, {"vitals": planned}, ctx.recording,
                 info.input_path, info.run_id, info.buckets, segment=1, after=info.sources)
    storage.write(later_events(replay).slice(0, 500), path, mode="append")  # a newer version
    for version, fresh in ((planned, "fresh"), (planned + 1, "fresh-newest")):
        # (the run to continue, not the fresh run of the same versions made just before)
        result = continue_query(replay, query, plan=PLAN, run_id="merged", log=lambda line: None)
        assert result.info.sources == {"vitals": version}
        replay.run(replay.prepare(query, plan=PLAN, run_id=fresh, version=version))
        assert output_rows(replay, "merged") == output_rows(replay, fresh)
        assert late_rows(replay, "merged") == late_rows(replay, fresh)
        assert validate_run(replay, catalog, "merged").ok

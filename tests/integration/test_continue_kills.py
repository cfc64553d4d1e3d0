"""A continuation killed with SIGKILL (``replay --continue``, ``follow``) is finished by the next
one: the same run, to the version it had planned, equal to a fresh replay at that version; the
one after goes further. A few kills here; the whole campaign (every commit boundary and random
instants, every family, with and without ``--plan``, shared runs) is the ``slow`` test."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from continue_kills import (
    CASES,
    Case,
    append_later_events,
    assert_equals_fresh,
    campaign,
    is_complete,
    kill_and_finish,
    ok,
    planned_version,
    prepare,
    reprise,
    run_json,
)


def later_readings_csv(folder: Path, patients: int, rows: int) -> Path:
    """``rows`` readings of ``patients`` of the generated recording, a year after it."""
    path = folder / "new.csv"
    lines = ["patient_id,ts,heart_rate,spo2"]
    width = len(str(patients))
    for i in range(rows):
        lines.append(f"p{i % patients:0{width}d},2027-06-01T{i // 3600 % 24:02d}:"
                     f"{i // 60 % 60:02d}:{i % 60:02d}Z,{60 + i % 70},{88 + i % 12}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_continue_killed_after_its_first_log_entry_is_finished_by_the_next_one(tmp_path):
    """The reproduction: a continuation killed right after the run's first new Delta log entry;
    the next ``--continue`` finishes that run (no "replaying from scratch", no second run) to
    the version it had planned, and the one after goes further."""
    warehouse, plan = tmp_path / "warehouse", ["--plan", "rows:1000"]
    ok(warehouse, "generate", "vitals", "--keys", "30", "--events", "8000", "--commits", "4")
    ok(warehouse, "replay", "vitals_hr_1m", *plan)
    (run_id,) = [p.name for p in (warehouse / "runs").iterdir()]
    ok(warehouse, "record", "vitals", str(later_readings_csv(tmp_path, 30, 3_000)))
    rc, out = reprise(warehouse, "replay", "vitals_hr_1m", "--continue", *plan, kill="c1")
    assert rc == -signal.SIGKILL, out
    assert not is_complete(warehouse, run_id)
    planned = planned_version(run_json(warehouse, run_id))
    newest = append_later_events(warehouse, days=600)  # the one after goes this far
    out = ok(warehouse, "replay", "vitals_hr_1m", "--continue", *plan)
    assert "from scratch" not in out, out
    assert [p.name for p in (warehouse / "runs").iterdir()] == [run_id]
    assert planned_version(run_json(warehouse, run_id)) == planned < newest
    assert_equals_fresh(warehouse, "vitals_hr_1m", run_id, "rows:1000", planned)
    ok(warehouse, "replay", "vitals_hr_1m", "--continue", *plan)  # the one after
    assert [p.name for p in (warehouse / "runs").iterdir()] == [run_id]
    assert planned_version(run_json(warehouse, run_id)) == newest
    assert_equals_fresh(warehouse, "vitals_hr_1m", run_id, "rows:1000", newest)


@pytest.mark.parametrize(("case", "kill"), [
    # spj: after its merged input grew and its segment was planned (c0 would kill it before it
    # planned anything: the next continuation then simply continues a complete run)
    (Case("vitals_spo2_histogram", "rows:1000"), "c3"),
    (Case("vitals_episode_max_avg", None, "follow"), "c2"),  # qre, its own plan; mid-rewind
    # a run made by a shared replay; after the rewind and the first new batch's output
    (Case("vitals_low_spo2", "rows:1000", partner="vitals_hr_1m"), "c2"),
], ids=str)
def test_a_killed_continuation_is_finished_by_the_next_one(tmp_path, case, kill):
    warehouse, run_id = prepare(tmp_path, case)
    line = kill_and_finish(warehouse, case, run_id, kill)
    assert "killed" in line and "interrupted" in line, line


def test_a_killed_shared_replay_is_finished_by_each_query_s_next_continue(tmp_path):
    """A shared first replay of several queries killed mid-way: each query's ``--continue``
    finishes its own run of it, at the version the shared replay pinned."""
    warehouse, queries = tmp_path / "warehouse", ["vitals_hr_1m", "vitals_low_spo2"]
    ok(warehouse, "generate", "vitals", "--keys", "20", "--events", "4000", "--commits", "3")
    rc, out = reprise(warehouse, "replay", *queries, "--plan", "rows:500", kill="c9")
    assert rc == -signal.SIGKILL, out
    runs = {run_json(warehouse, p.name)["query"]: p.name for p in (warehouse / "runs").iterdir()}
    interrupted = {q for q, r in runs.items() if not is_complete(warehouse, r)}
    assert interrupted, "the kill left every run complete"
    pinned = {q: planned_version(run_json(warehouse, r)) for q, r in runs.items()}
    newest = append_later_events(warehouse, days=1)
    for query in queries:
        ok(warehouse, "replay", query, "--continue", "--plan", "rows:500")
    assert {run_json(warehouse, p.name)["query"]: p.name
            for p in (warehouse / "runs").iterdir()} == runs
    for query, run_id in runs.items():
        # an interrupted run is finished where it was pinned; a complete one goes further
        version = pinned[query] if query in interrupted else newest
        assert planned_version(run_json(warehouse, run_id)) == version
        assert_equals_fresh(warehouse, query, run_id, "rows:500", version)

@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=str)
def test_every_commit_boundary_and_random_instants(tmp_path, case):
    assert campaign(tmp_path, case, randoms=2, say=lambda line: None) >= 3

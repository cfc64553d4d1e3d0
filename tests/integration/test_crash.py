"""A replay killed with SIGKILL and resumed equals an uninterrupted run, row for row."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from deltalake import DeltaTable

from jobs.recordings.store import generate_recording
from jobs.runs.replay import Replay
from jobs.warehouse import Warehouse

ROOT = Path(__file__).resolve().parents[2]
PLAN = "rows:2000"
#: Three batches per Spark job: the manifest grows by three rows a job, so a kill lands mid-run.
PER_JOB = "3"


def start_replay(warehouse: Path | str, run_id: str):
    """``reprise replay`` in a process of its own."""
    return subprocess.Popen(
        [sys.executable, "-m", "jobs.cli.app", "replay", "vitals_hr_1m", "--plan", PLAN,
         "--run-id", run_id], cwd=ROOT, env=child_env(warehouse), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True)


def start_replay_dying_before_manifest(warehouse: Path, run_id: str, batch: int):
    """A replay in a process of its own that kills itself after the table commits of the job
    holding ``batch`` and before its manifest commit (``crash_replay.py``)."""
    return subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "support" / "crash_replay.py"), str(warehouse),
         "vitals_hr_1m", PLAN, run_id, str(batch)], cwd=ROOT, env=child_env(warehouse),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)


def child_env(warehouse: Path | str) -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "REPRISE_WAREHOUSE": str(warehouse),
            "REPRISE_BATCHES_PER_JOB": PER_JOB}


def committed_batches(warehouse: Warehouse, run_id: str) -> int:
    path = warehouse.run_table(run_id, "manifest")
    if not DeltaTable.is_deltatable(path):
        return 0
    return DeltaTable(path).to_pyarrow_table().num_rows


def output_rows(replay: Replay, run_id: str) -> list[tuple]:
    frame = replay.storage.read_arrow(replay.warehouse.run_table(run_id, "output")).to_pandas()
    return sorted(tuple(r) for r in frame.astype(object).itertuples(index=False))


def late_rows(replay: Replay, run_id: str) -> list[tuple]:
    frame = replay.storage.read_arrow(replay.warehouse.run_table(run_id, "late")).to_pandas()
    return sorted(tuple(r) for r in frame.astype(object).itertuples(index=False))


def prepared(spark, storage, catalog, warehouse) -> Replay:
    generate_recording(storage, warehouse, catalog, "vitals", keys=20, events=30_000, seed=4,
                       commits=3)
    return Replay(spark, storage, warehouse, catalog)


def test_sigkill_mid_run_then_resume_equals_uninterrupted(spark, backend_storage, catalog,
                                                          warehouse):
    killed_and_resumed(spark, backend_storage, catalog, warehouse)  # (each backend in turn)


def test_sigkill_mid_run_on_an_s3_warehouse_then_resume_equals_uninterrupted(
        spark, storage, catalog, s3_warehouse, monkeypatch):
    # (the lock object of the killed replay is taken over once its lease runs out)
    monkeypatch.setenv("REPRISE_LOCK_LEASE", "3")
    killed_and_resumed(spark, storage, catalog, s3_warehouse, lease=3)


def killed_and_resumed(spark, storage, catalog, warehouse: Warehouse, lease: int = 0) -> None:
    """Kill a replay after its fourth batch and resume it here (after ``lease`` seconds, the
    lease of its run lock on an object store): it equals a straight run."""
    replay = prepared(spark, storage, catalog, warehouse)
    proc = start_replay(warehouse.root, "crashy")
    deadline = time.monotonic() + 600  # (a loaded machine, a JVM per process)
    while committed_batches(warehouse, "crashy") < 4:
        assert proc.poll() is None, proc.stdout.read().decode()
        assert time.monotonic() < deadline, "replay made no progress"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    if lease:
        time.sleep(lease)
    info = replay.prepare("vitals_hr_1m", plan=PLAN, run_id="crashy")
    assert 4 <= committed_batches(warehouse, "crashy") < info.batches + 1
    replay.run(info)
    replay.run(replay.prepare("vitals_hr_1m", plan=PLAN, run_id="straight"))
    resumed = output_rows(replay, "crashy")
    assert resumed == output_rows(replay, "straight")
    assert len(resumed) == len(set(resumed))  # no duplicate
    assert late_rows(replay, "crashy") == late_rows(replay, "straight")
    manifest = replay.manifest("crashy").to_pandas()
    assert manifest["batch"].tolist() == list(range(info.batches + 1))


def test_crash_between_table_commits_and_manifest(spark, backend_storage, catalog, warehouse):
    storage = backend_storage  # (each backend in turn)
    replay = prepared(spark, storage, catalog, warehouse)
    proc = start_replay_dying_before_manifest(warehouse.root, "torn", 3)
    assert proc.wait(timeout=600) == -signal.SIGKILL
    # the job of batches 3-5 committed their tables but not their manifest rows
    assert committed_batches(warehouse, "torn") == 3
    info = replay.prepare("vitals_hr_1m", plan=PLAN, run_id="torn")
    replay.run(info)
    replay.run(replay.prepare("vitals_hr_1m", plan=PLAN, run_id="straight"))
    assert output_rows(replay, "torn") == output_rows(replay, "straight")
    assert late_rows(replay, "torn") == late_rows(replay, "straight")
    # the retried batches 3-5 found their commits: each manifest row names its own versions
    versions = ["batch", "output_version", "state_version"]
    assert (replay.manifest("torn").to_pandas()[versions].values.tolist()
            == replay.manifest("straight").to_pandas()[versions].values.tolist())

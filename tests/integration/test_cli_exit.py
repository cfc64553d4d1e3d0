"""The ``reprise`` process itself (``jobs.cli.entry:run``, then ``jobs.cli.app:run``): its exit
status is the command's, errors are one line, and it never aborts in the interpreter's teardown
after the work is done (delta-rs and pyarrow threads could make a normal exit abort with status
134 now and then)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def reprise(warehouse: Path, *args: str) -> subprocess.CompletedProcess:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "REPRISE_WAREHOUSE": str(warehouse)}
    return subprocess.run([sys.executable, "-m", "jobs.cli.app", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)


def test_the_installed_command_is_the_guarded_entry_point():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["reprise"] == "jobs.cli.entry:run"


def test_exit_status_and_error_line_pass_through_and_reading_tables_never_aborts():
    warehouse = Path(tempfile.mkdtemp(prefix="reprise-exit-"))
    assert reprise(warehouse, "generate", "vitals", "--keys", "5", "--events", "300",
                   "--commits", "2").returncode == 0
    assert reprise(warehouse, "replay", "vitals_hr_1m").returncode == 0
    missing = reprise(warehouse, "validate", "no-such-run")
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: no run 'no-such-run'")
    assert len(missing.stderr.strip().splitlines()) == 1
    # each `runs` opens the run's Delta tables with delta-rs: before the guarded exit, about one
    # process in fifteen aborted (status 134) after printing its table
    statuses = [reprise(warehouse, "runs").returncode for _ in range(12)]
    assert statuses == [0] * 12


def test_time_plans_replay_in_a_process_without_spark(monkeypatch):
    """A small replay runs in the command's process without a Spark session: its time plan is
    resolved without one (the shipped ``ads_10s`` cuts by 2 s of event time)."""
    monkeypatch.setenv("REPRISE_ENGINE", "auto")  # (the estimate keeps it in the driver)
    warehouse = Path(tempfile.mkdtemp(prefix="reprise-time-"))
    assert reprise(warehouse, "generate", "ads", "--keys", "5", "--events", "400",
                   "--commits", "2").returncode == 0
    assert reprise(warehouse, "generate", "vitals", "--keys", "5", "--events", "400",
                   "--commits", "2").returncode == 0
    for args in (["ads_10s"], ["vitals_hr_1m", "--plan", "time:1h", "--run-id", "hourly"]):
        done = reprise(warehouse, "replay", *args)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
    assert reprise(warehouse, "validate", "hourly").returncode == 0


def test_ctrl_c_during_a_spark_replay_is_one_line_and_the_run_resumes():
    """SIGINT while Spark jobs run: one ``error:`` line, status 130 (PySpark's own handler
    ended in a Py4J traceback), and the same command then completes the run."""
    warehouse = Path(tempfile.mkdtemp(prefix="reprise-sigint-"))
    assert reprise(warehouse, "generate", "vitals", "--keys", "20", "--events", "30000",
                   "--commits", "3").returncode == 0
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "REPRISE_WAREHOUSE": str(warehouse),
           "REPRISE_ENGINE": "spark", "REPRISE_BATCHES_PER_JOB": "4"}
    args = [sys.executable, "-m", "jobs.cli.app", "replay", "vitals_hr_1m", "--plan", "rows:300",
            "--run-id", "interrupted"]
    with subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None
        for line in process.stdout:  # the first group of batches committed: Spark is running
            if "committed" in line:
                break
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines() == [
        "error: interrupted; run the same command again to resume a replay after its last "
        "committed batch"]
    again = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert again.returncode == 0, again.stderr
    assert reprise(warehouse, "validate", "interrupted").returncode == 0


def test_a_data_file_gone_from_a_recording_is_one_line_naming_it():
    """A Delta table whose data file was removed outside reprise: read by Spark (``validate``)
    or by pyarrow in the process (a small ``replay``), one line naming the file (before: a
    Spark AnalysisException or a FileNotFoundError traceback)."""
    warehouse = Path(tempfile.mkdtemp(prefix="reprise-missing-"))
    assert reprise(warehouse, "generate", "vitals", "--keys", "5", "--events", "600",
                   "--commits", "2").returncode == 0
    assert reprise(warehouse, "replay", "vitals_hr_1m", "--run-id", "before").returncode == 0
    gone = sorted((warehouse / "recordings" / "vitals").rglob("*.parquet"))[0]
    gone.unlink()
    for args in (["validate", "before"], ["replay", "vitals_hr_1m", "--run-id", "after"]):
        done = reprise(warehouse, *args)
        assert done.returncode == 1, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: a file of a Delta table is "
                                                       "missing: "), done.stderr
        assert gone.name in lines[0]


def test_python_m_jobs_cli_has_every_command():
    # (under `-m` every command is registered, `analyze` too)
    done = reprise(Path(tempfile.mkdtemp(prefix="reprise-m-")), "analyze",
                   "SELECT DISTINCT S.A FROM S", "--schema", "S(A,B)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("unbounded (set semantics") and "C1" in done.stdout

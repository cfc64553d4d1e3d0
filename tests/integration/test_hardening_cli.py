"""The CLI under hostile or careless input: names, versions, plans, runs (shared Spark)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import RECORDING, events_table, small_catalog, write_commits
from typer.testing import CliRunner

from engine.catalog import load_catalog
from jobs.cli.app import app
from jobs.runs.replay import Replay
from jobs.runs.run_lock import run_lock
from jobs.warehouse import Warehouse


@pytest.fixture
def setup(spark, storage, tmp_path):
    """A small catalog and a 3-commit recording ``ev``; ``run(*args)`` invokes the CLI on them."""
    catalog = tmp_path / "cat"
    small_catalog(catalog)
    wh = tmp_path / "wh"
    write_commits(storage, str(wh / "recordings" / "ev"), events_table(np.random.default_rng(3),
                                                                        120), 3)
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(app, [*args, "--warehouse", str(wh), "--catalog", str(catalog)])

    return run, tmp_path


def test_record_refuses_a_recording_name_that_leads_outside_the_warehouse(setup):
    run, tmp_path = setup
    (tmp_path / "cat" / "recordings" / "evil.yaml").write_text(
        RECORDING.replace("name: ev", "name: ../../escaped"))
    (tmp_path / "cat" / "recordings" / "...yaml").write_text(  # file name '..', name: '..'
        RECORDING.replace("name: ev", "name: '..'"))
    source = tmp_path / "in.csv"
    source.write_text("k,ts,v\na,2026-01-01T00:00:00Z,1\n")
    result = run("record", "../../escaped", str(source))
    assert result.exit_code == 1
    assert "unknown recording '../../escaped'" in result.output
    assert "files that failed to load: .., evil" in result.output
    result = run("record", "evil", str(source))
    assert result.exit_code == 1
    assert "evil.yaml: field 'name': '../../escaped' is not the file's name 'evil'" in \
        result.output
    result = run("record", "..", str(source))  # a catalog name becomes a path: the same rule
    assert result.exit_code == 1
    assert "...yaml: field 'name': '..' is not a valid name" in result.output
    assert not (tmp_path / "escaped").exists() and "Traceback" not in result.output
    assert not (tmp_path / "wh" / "_delta_log").exists()


def test_replay_refuses_a_run_id_that_leads_outside_the_runs_directory(setup):
    run, tmp_path = setup
    result = run("replay", "ev_w", "--run-id", "../../x")
    assert result.exit_code == 1, result.output
    assert "run id '../../x' is not a valid name" in result.output
    assert not (tmp_path / "x").exists() and not (tmp_path / "wh" / "x").exists()
    result = run("validate", "/etc")
    assert result.exit_code == 1 and "run id '/etc'" in result.output


def test_replay_refuses_a_version_other_than_the_runs_pinned_one(setup):
    run, _ = setup
    first = run("replay", "ev_w", "--run-id", "r", "--version", "1")
    assert first.exit_code == 0, first.output
    again = run("replay", "ev_w", "--run-id", "r", "--version", "2")
    assert again.exit_code == 1
    assert "run 'r' is pinned to version 1 of 'ev', not 2" in again.output
    assert run("replay", "ev_w", "--run-id", "r", "--version", "1").exit_code == 0


@pytest.mark.parametrize("version", ["999", "-1", "3"])
def test_replay_of_a_version_the_recording_does_not_have_says_so_in_one_line(setup, version):
    run, _ = setup
    result = run("replay", "ev_w", "--version", version)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"--version {version}: recording 'ev' has versions 0 to 2" in result.output


def test_an_empty_plan_is_rejected_not_taken_for_the_default(setup):
    run, _ = setup
    result = run("replay", "ev_w", "--plan", "")
    assert result.exit_code == 1 and "invalid batch plan ''" in result.output


def test_a_plan_with_more_batches_than_the_sane_count_warns_in_one_line(setup, monkeypatch):
    monkeypatch.setattr("engine.batch_plans.MANY_BATCHES", 2)
    run, _ = setup
    result = run("replay", "ev_w", "--plan", "rows:40", "--run-id", "fine")
    assert result.exit_code == 0, result.output
    warning = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "3 batches" in warning[0]


def test_runs_shows_query_versions_status_batches_rows_and_when(setup, spark, storage):
    run, tmp_path = setup
    assert run("replay", "ev_w", "--run-id", "done", "--plan", "rows:50").exit_code == 0
    again = run("replay", "ev_w", "--run-id", "done")
    assert again.exit_code == 0 and "already complete: nothing to do" in again.output
    assert "resuming" not in again.output
    wh = Warehouse(tmp_path / "wh")
    Replay(spark, storage, wh, load_catalog(tmp_path / "cat")).prepare(
        "ev_q", run_id="stopped", plan="rows:40")  # an interrupted run: prepared, never run

    def listing() -> dict[str, str]:
        result = CliRunner().invoke(app, ["runs", "--warehouse", str(wh.root)])
        assert result.exit_code == 0, result.output
        return {line.split()[1]: line for line in result.output.splitlines()
                if line.split()[1:2] in (["done"], ["stopped"])}

    rows = listing()
    assert "ev_w" in rows["done"] and "ev@2" in rows["done"] and " complete " in rows["done"]
    assert "4/4" in rows["done"] and "UTC" in rows["done"]
    assert "ev_q" in rows["stopped"] and "incomplete" in rows["stopped"]
    assert "0/4" in rows["stopped"]
    with run_lock(wh.run_dir("stopped"), "stopped"):
        assert "in progress" in listing()["stopped"]


def test_a_losing_concurrent_writer_says_what_happened_in_one_line(setup):
    run, tmp_path = setup
    wh = Warehouse(tmp_path / "wh")
    with run_lock(wh.run_dir("shared"), "shared"):
        result = run("replay", "ev_w", "--run-id", "shared")
    assert result.exit_code == 1 and "Traceback" not in result.output
    message = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(message) == 1
    assert "run 'shared' is being replayed by another process" in message[0]
    assert run("replay", "ev_w", "--run-id", "shared").exit_code == 0  # the lock is gone


def test_validate_prints_its_stages(setup):
    run, _ = setup
    assert run("replay", "ev_w", "--run-id", "v").exit_code == 0
    result = run("validate", "v")
    assert result.exit_code == 0, result.output
    stages = [line for line in result.output.splitlines() if line.startswith("validate: ")]
    # a window query: the reference is computed per key bucket as the input is read (2 stages)
    assert len(stages) == 2 and "120 input events of ev v2" in stages[0]
    assert "comparing" in stages[1]

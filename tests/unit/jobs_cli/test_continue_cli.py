"""Option errors of ``replay --continue``, ``follow`` and ``gc`` are one ``error:`` line, found
before Spark starts."""

from __future__ import annotations

import json
from dataclasses import asdict

from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.runs.run_info import RunInfo


def error_line(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def test_continue_takes_no_version():
    assert "takes no --version" in error_line("replay", "vitals_hr_1m", "--continue",
                                              "--version", "3")


def test_follow_rejects_a_bad_interval_naming_the_option():
    line = error_line("follow", "vitals_hr_1m", "--every", "soon")
    assert "--every" in line and "soon" in line
    assert "--for" in error_line("follow", "vitals_hr_1m", "--for", "5 parsecs")


def test_follow_refuses_a_zero_interval_and_a_negative_segment_count():
    # before: --every 0s looked for new versions in a busy loop; --max-segments -1 was taken
    assert "--every '0s': give a positive interval" in error_line("follow", "vitals_hr_1m",
                                                                  "--every", "0s")
    assert "--max-segments -1" in error_line("follow", "vitals_hr_1m", "--max-segments", "-1")


def test_gc_keeps_at_least_one_run():
    assert "--keep" in error_line("gc", "--keep", "0")


def _a_run(tmp_path, run_id: str, query: str, plan: str = "commit") -> str:
    """A warehouse holding the ``run.json`` of run ``run_id`` of ``query`` (no tables)."""
    info = RunInfo(run_id=run_id, query=query, fingerprint="f", recording="vitals",
                   input_path=str(tmp_path / "recordings" / "vitals"), input_version=0,
                   plan=plan, cuts=[0, 0], files=[], buckets=1, operator="op")
    run_dir = tmp_path / "runs" / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps(asdict(info)))
    return str(tmp_path)


def test_continue_refuses_a_run_of_another_query(tmp_path):
    # before: `replay vitals_low_spo2 --continue --run-id R` silently continued R, a run of
    # vitals_hr_1m
    wh = _a_run(tmp_path, "r1", "vitals_hr_1m")
    line = error_line("replay", "vitals_low_spo2", "--continue", "--run-id", "r1",
                      "--warehouse", wh, "--backend", "delta-rs")
    assert "run 'r1' is a run of query 'vitals_hr_1m', not 'vitals_low_spo2'" in line


def test_continue_refuses_a_plan_other_than_the_runs(tmp_path):
    wh = _a_run(tmp_path, "r1", "vitals_hr_1m")
    line = error_line("replay", "vitals_hr_1m", "--continue", "--run-id", "r1", "--plan",
                      "rows:5", "--warehouse", wh, "--backend", "delta-rs")
    assert "run 'r1' uses plan 'commit', not 'rows:5'" in line


def test_an_empty_run_id_is_refused_not_defaulted(tmp_path):
    for extra in ([], ["--continue"]):
        line = error_line("replay", "vitals_hr_1m", "--run-id", "", *extra,
                          "--warehouse", str(tmp_path), "--backend", "delta-rs")
        assert "run id '' is not a valid name" in line


def test_runs_prints_each_run_id_whole_on_one_line(tmp_path):
    # before: without a terminal the table was 120 wide and cut long run ids ("vitals_hr_1m-v3-…")
    long_id = "vitals_tachy_count-v12-rows40000-aad006-a-long-suffix-for-the-check"
    wh = _a_run(tmp_path, long_id, "vitals_tachy_count")
    result = CliRunner().invoke(app, ["runs", "--warehouse", wh])
    assert result.exit_code == 0, result.output
    assert [line for line in result.output.splitlines() if long_id in line], result.output


def test_a_damaged_run_json_is_one_error_line_naming_it(tmp_path):
    # before: `runs`, `validate` and `replay --run-id` printed a JSONDecodeError traceback
    wh = _a_run(tmp_path, "r1", "vitals_hr_1m")
    run_file = tmp_path / "runs" / "r1" / "run.json"
    for text in ("{bad", '{"run_id": "r1"}'):
        run_file.write_text(text)
        for args in (["runs"], ["validate", "r1", "--backend", "delta-rs"],
                     ["replay", "vitals_hr_1m", "--continue", "--run-id", "r1", "--backend",
                      "delta-rs"]):
            line = error_line(*args, "--warehouse", wh)
            assert f"{run_file}: not a readable run description" in line, (args, line)

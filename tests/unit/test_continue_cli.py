"""Option errors of ``replay --continue``, ``follow`` and ``gc`` are one ``error:`` line, found
before Spark starts."""

from __future__ import annotations

from typer.testing import CliRunner

from jobs.cli import app


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


def test_gc_keeps_at_least_one_run():
    assert "--keep" in error_line("gc", "--keep", "0")

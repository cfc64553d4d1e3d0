"""The CLI prints a project error as one ``error:`` line with exit code 1, and reads the catalog
from ``--catalog`` or ``REPRISE_CATALOG`` (commands here need no Spark)."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from jobs.cli import app

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def error_line(result) -> str:
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def test_a_project_error_from_inside_a_command_is_one_line():
    line = error_line(run("analyze", "--query", "vitals_hr_1m", "--catalog", str(SCHEMAS)))
    assert "vitals_hr_1m.yaml: field 'kind'" in line and "only spj queries" in line


def test_messages_are_printed_literally():
    line = error_line(run("analyze", "--query", "[bold]x[/]", "--catalog", str(SCHEMAS)))
    assert "unknown query '[bold]x[/]'" in line


def test_a_multi_line_message_is_joined_on_one_line(tmp_path):
    catalog = tmp_path / "schemas"
    shutil.copytree(SCHEMAS, catalog)
    (catalog / "queries" / "ads_10s.yaml").write_text("name: ads_10s\nkind: [window\n\n")
    line = error_line(run("analyze", "--query", "ads_10s", "--catalog", str(catalog)))
    assert "ads_10s.yaml: field '<document>': not valid YAML (line 4" in line


def test_the_catalog_comes_from_the_option_else_the_environment(tmp_path, monkeypatch):
    missing = tmp_path / "nowhere"
    line = error_line(run("analyze", "--query", "q", "--catalog", str(missing)))
    assert f"the catalog directory {missing} does not exist" in line
    monkeypatch.setenv("REPRISE_CATALOG", str(missing))
    line = error_line(run("analyze", "--query", "q"))
    assert f"the catalog directory {missing} does not exist" in line
    monkeypatch.setenv("REPRISE_CATALOG", str(SCHEMAS))
    result = run("analyze", "--query", "ads_campaign_counts")
    assert result.exit_code == 0 and "bounded" in result.output, result.output

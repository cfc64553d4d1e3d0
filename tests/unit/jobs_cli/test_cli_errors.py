"""The CLI prints a project error as one ``error:`` line with exit code 1, and reads the catalog
from ``--catalog`` or ``REPRISE_CATALOG`` (commands here need no Spark)."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from jobs.cli.app import app

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"


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
    afile = tmp_path / "afile"
    afile.write_text("x")
    line = error_line(run("analyze", "--query", "q", "--catalog", str(afile)))
    assert f"the catalog directory {afile} is not a directory" in line
    monkeypatch.setenv("REPRISE_CATALOG", str(SCHEMAS))
    result = run("analyze", "--query", "ads_campaign_counts")
    assert result.exit_code == 0 and "bounded" in result.output, result.output


def test_a_line_of_text_is_never_broken_without_a_terminal(capsys):
    # before: the 120-column console broke the run's summary line ("... peak state 59 rows /\n")
    import pandas as pd

    from jobs.cli.output import print_manifest_summary

    manifest = pd.DataFrame({"duration_s": [1.0, 1.0], "rows_in": [10**6, 0],
                             "rows_out": [10**5, 1], "late": [123, 0], "quarantined": [4, 0],
                             "state_rows": [10**6, 0], "state_bytes": [10**9, 0]})
    print_manifest_summary("a-rather-long-run-id-v12-rows40000-aad006-segment", manifest)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "1000000000 bytes" in out, out


def test_option_help_names_the_environment_variable():
    # before: "[env REPRISE_WAREHOUSE, ...]" was read as rich markup and vanished from --help
    def words(*args: str) -> str:  # the help's words, without the box drawn around them
        return " ".join(run(*args).output.replace("│", " ").split())

    out = words("replay", "--help")
    for text in ("env REPRISE_WAREHOUSE", "env REPRISE_CATALOG", "env REPRISE_DELTA_BACKEND"):
        assert text in out, out
    assert "env REPRISE_VERBOSE=1" in words("--help")


def test_a_table_is_never_cut_without_a_terminal(capsys):
    # before: `record`'s table showed two long file names as the same "/tmp/…/another…"
    from rich.table import Table

    from jobs.cli.output import print_table

    names = [f"/data/{'a-long-directory-name/' * 6}readings-{i}.csv" for i in (7, 8)]
    table = Table("file", "rows")
    for name in names:
        table.add_row(name, "1")
    print_table(table)
    lines = capsys.readouterr().out.splitlines()
    assert all(sum(name in line for line in lines) == 1 for name in names), lines
    # nor its title (`validate <run id>` with a 200-character run id wrapped over three lines)
    run_id = "r" * 200
    titled = Table("check", "result", title=f"validate {run_id}")
    titled.add_row("output", "ok")
    print_table(titled)
    assert any(f"validate {run_id}" in line for line in capsys.readouterr().out.splitlines())


def test_a_usage_error_is_one_line_naming_the_command_with_exit_2():
    # (before: click's usage text and a boxed error over five lines)
    cases = {("replay",): "replay: Missing argument 'QUERY...'",
             ("nosuch",): "No such command 'nosuch'",
             ("generate", "vitals", "--keys", "x"): "generate: Invalid value for '--keys'",
             ("replay", "vitals_hr_1m", "--bogus"): "replay: No such option: --bogus",
             ("--bogus", "runs"): "No such option: --bogus",
             ("runs", "--warehouse", ""): "runs: Invalid value for '--warehouse': empty path",
             ("plan", "vitals_hr_1m", "--catalog", " "): "Invalid value for '--catalog': empty"}
    for args, problem in cases.items():
        result = run(*args)
        assert result.exit_code == 2, (args, result.output)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and problem in lines[0], \
            (args, result.output)
        assert "--help)" in lines[0]
    assert "Usage:" in run().output  # no command at all: the help, as before

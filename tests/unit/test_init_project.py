"""``reprise init DIR``: a project whose catalog every command finds from its directory."""

from __future__ import annotations

import os

import pytest
import yaml
from typer.testing import CliRunner

from engine.catalog import load_catalog
from jobs.cli.app import app
from jobs.cli.init_project import EXAMPLE_QUERY, EXAMPLE_RECORDING, ProjectError, make_project
from jobs.settings import Settings, find_catalog


def test_init_writes_a_catalog_the_directory_s_commands_find(tmp_path):
    project = tmp_path / "mine"
    result = CliRunner().invoke(app, ["init", str(project)])
    assert result.exit_code == 0, result.output
    catalog = load_catalog(project / "schemas")
    catalog.check()
    assert set(catalog.recordings) == {EXAMPLE_RECORDING}
    assert set(catalog.queries) == {EXAMPLE_QUERY}
    assert catalog.query(EXAMPLE_QUERY).input == EXAMPLE_RECORDING
    assert find_catalog({}, project).path == project / "schemas"
    assert Settings.from_env({}, cwd=project).catalog == project / "schemas"
    workspace = yaml.safe_load((project / "workspace.yaml").read_text())
    module = workspace["load_from"][0]["python_module"]
    assert module["module_name"] == "orchestration.definitions"
    assert module["working_directory"] == "."


def test_an_empty_existing_directory_is_fine(tmp_path):
    assert make_project(tmp_path)
    assert (tmp_path / "schemas" / "queries" / f"{EXAMPLE_QUERY}.yaml").is_file()


def test_a_directory_that_is_not_empty_is_refused_in_one_line(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    result = CliRunner().invoke(app, ["init", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"error: {tmp_path}: exists and is not empty; give a new or empty directory"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_file_is_refused(tmp_path):
    target = tmp_path / "file"
    target.write_text("")
    result = CliRunner().invoke(app, ["init", str(target)])
    assert result.exit_code == 1 and "exists and is not a directory" in result.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in read-only directories")
def test_an_unwritable_directory_is_one_line_and_leaves_nothing(tmp_path):
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o500)
    try:
        result = CliRunner().invoke(app, ["init", str(parent / "mine")])
    finally:
        parent.chmod(0o700)
    assert result.exit_code == 1
    assert result.output.startswith(f"error: {parent / 'mine'}: cannot write the project")
    assert len(result.output.strip().splitlines()) == 1
    assert not (parent / "mine").exists()


def test_a_failed_write_leaves_the_directory_as_it_was(tmp_path):
    blocked = tmp_path / "mine"
    blocked.mkdir()
    bundled_missing = tmp_path / "no-catalog"  # the example files cannot be read
    with pytest.raises(ProjectError, match="cannot write the project"):
        make_project(blocked, bundled=bundled_missing)
    assert list(blocked.iterdir()) == []
    with pytest.raises(ProjectError, match="cannot write the project"):
        make_project(tmp_path / "new", bundled=bundled_missing)
    assert not (tmp_path / "new").exists()


def test_dagster_in_the_project_directory_builds_from_its_catalog(tmp_path, monkeypatch):
    from orchestration.definitions import build_definitions

    make_project(tmp_path / "mine")
    monkeypatch.delenv("REPRISE_CATALOG", raising=False)
    monkeypatch.chdir(tmp_path / "mine")
    defs = build_definitions()
    keys = {"/".join(key.path) for key in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == {f"recordings/{EXAMPLE_RECORDING}", f"replays/{EXAMPLE_QUERY}"}


def test_a_command_says_when_it_falls_back_to_the_sample_catalog(tmp_path, monkeypatch):
    monkeypatch.delenv("REPRISE_CATALOG", raising=False)
    monkeypatch.chdir(tmp_path)
    args = ["plan", "nope", "--warehouse", str(tmp_path / "wh")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "using the sample catalog" in notes[0]
    make_project(tmp_path / "mine")
    monkeypatch.chdir(tmp_path / "mine")
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and "note:" not in result.stderr
    assert f"catalog {tmp_path / 'mine' / 'schemas'}" in result.stderr  # its own catalog

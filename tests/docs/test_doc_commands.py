"""Every command of the README's tour and of the getting-started page works as written, on a
fresh warehouse; the getting-started page also in a new directory outside the checkout."""

from __future__ import annotations

import pytest
from doc_commands import commands, run

from jobs.settings import PROJECT_ROOT

README = PROJECT_ROOT / "README.md"
GETTING_STARTED = PROJECT_ROOT / "docs" / "getting-started.md"


@pytest.fixture
def clean_env(monkeypatch):
    """No catalog or warehouse from the environment: the commands find their own."""
    for name in ("REPRISE_CATALOG", "REPRISE_WAREHOUSE"):
        monkeypatch.delenv(name, raising=False)


def test_the_pages_have_tested_blocks():
    assert len(commands(README, "tour")) >= 8
    first = commands(GETTING_STARTED, "getting-started")
    assert first[0].text.startswith("reprise init ") and first[1].text.startswith("cd ")


def test_the_readme_tour_works_as_written_on_a_fresh_warehouse(spark, tmp_path, clean_env,
                                                               monkeypatch):
    # the tour runs in the checkout; here its commands read the checkout's catalog and write a
    # warehouse of their own
    monkeypatch.setenv("REPRISE_CATALOG", str(PROJECT_ROOT / "schemas"))
    cwd = tmp_path
    for command in commands(README, "tour"):
        cwd = run(command, cwd)
    assert (tmp_path / "warehouse" / "runs").is_dir()


def test_getting_started_works_in_a_new_directory_outside_the_checkout(spark, tmp_path,
                                                                       clean_env):
    assert not tmp_path.resolve().is_relative_to(PROJECT_ROOT)
    cwd = tmp_path
    for command in commands(GETTING_STARTED):
        cwd = run(command, cwd)
    assert cwd == (tmp_path / "myproject").resolve()
    assert (cwd / "warehouse" / "runs" / "first" / "run.json").is_file()
    assert (cwd / "warehouse" / "runs" / "low" / "run.json").is_file()

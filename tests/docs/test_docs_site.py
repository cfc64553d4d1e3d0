"""The documentation site builds in strict mode, documents every command and setting, and
keeps to the product: no development history in the README or the pages."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import yaml

from jobs.cli.app import app
from jobs.settings import PROJECT_ROOT
from orchestration.resources import SparkResource, WarehouseResource

DOCS = PROJECT_ROOT / "docs"
README = PROJECT_ROOT / "README.md"
# (not --quiet: it hides the warnings that --strict counts)
MKDOCS = [sys.executable, "-m", "mkdocs", "build", "--strict"]
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*MKDOCS, "-f", str(config), "-d", str(site)], cwd=config.parent,
                          capture_output=True, text=True, env=ENV)


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def test_the_site_builds_in_strict_mode(tmp_path):
    done = build(PROJECT_ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()


def nav_pages(nav: list) -> set[str]:
    found: set[str] = set()
    for item in nav:
        for value in (item.values() if isinstance(item, dict) else [item]):
            found |= nav_pages(value) if isinstance(value, list) else {value}
    return found


def test_every_page_is_in_the_navigation_and_every_navigation_entry_exists():
    config = yaml.safe_load((PROJECT_ROOT / "mkdocs.yml").read_text())
    listed = nav_pages(config["nav"])
    on_disk = {str(p.relative_to(DOCS)) for p in pages()}
    assert listed == on_disk


@pytest.mark.parametrize("breakage", ["a link to a page that is not there",
                                      "a page missing from the navigation"])
def test_a_broken_link_or_a_missing_page_fails_the_build(tmp_path, breakage):
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(PROJECT_ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    if breakage.startswith("a link"):
        page = tmp_path / "docs" / "index.md"
        page.write_text(page.read_text() + "\n[gone](guide/no-such-page.md)\n")
    else:
        (tmp_path / "docs" / "orphan.md").write_text("# Not in the nav\n")
    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0


def commands(group=None, prefix: str = "reprise") -> dict[str, object]:
    """Every command of the typer app and its sub-apps, by its full name."""
    group = group or typer.main.get_command(app)
    found = {}
    for name, command in group.commands.items():
        full = f"{prefix} {name}"
        if hasattr(command, "commands"):
            found |= commands(command, full)
        else:
            found[full] = command
    return found


def section(text: str, heading: str) -> str:
    """The text under ``## `heading``` up to the next heading of that level."""
    parts = re.split(r"^## ", text, flags=re.M)
    matching = [p for p in parts if p.startswith(f"`{heading}`")]
    assert matching, f"reference/cli.md has no section `{heading}`"
    return matching[0]


def test_every_command_and_option_is_in_the_cli_reference():
    text = (DOCS / "reference" / "cli.md").read_text()
    found = commands()
    assert "reprise init" in found and "reprise replay" in found
    for name, command in found.items():
        body = section(text, name)
        for param in command.params:
            options = [o for o in param.opts if o.startswith("--") and o != "--help"]
            for option in options:
                assert option in body, f"{name}: {option} is not documented"
    for option in ("--verbose",):
        assert option in text


def test_every_setting_and_dagster_resource_field_is_in_the_settings_reference():
    text = (DOCS / "reference" / "settings.md").read_text()
    source = (PROJECT_ROOT / "jobs" / "settings.py").read_text()
    variables = set(re.findall(r"\bREPRISE_[A-Z_]+\b", source))
    assert {"REPRISE_WAREHOUSE", "REPRISE_CATALOG", "REPRISE_ENGINE"} <= variables
    rows = set(re.findall(r"^\| `(REPRISE_[A-Z_]+)` \|", text, re.M))
    assert variables <= rows, f"not documented: {sorted(variables - rows)}"
    for resource, cls in (("spark", SparkResource), ("warehouse", WarehouseResource)):
        for field in cls.model_fields:
            assert re.search(rf"^\| `{resource}` \| `{field}` \|", text, re.M), \
                f"resource field {resource}.{field} is not documented"


def test_the_readme_is_short_and_its_links_into_the_docs_exist():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    links = re.findall(r"\]\((docs/[^)#]+)", text)
    assert links
    missing = [link for link in links if not (PROJECT_ROOT / link).exists()]
    assert not missing


HISTORY = [
    (r"\bissues?\s*#?\d+", "an issue number"),
    (r"(?<![\w/-])#\d+\b", "an issue number"),
    (r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b", "a commit hash"),
    (r"\b(this|last|previous|earlier|latest) session\b", "a session's account"),
    (r"\bload average (of|was) \d", "a load-average diary"),
]


@pytest.mark.parametrize("path", [README, *pages()], ids=lambda p: p.name)
def test_no_development_history(path):
    text = path.read_text()
    for pattern, what in HISTORY:
        found = re.search(pattern, text, re.I)
        assert found is None, f"{path.name}: {what}: {found.group(0)!r}"

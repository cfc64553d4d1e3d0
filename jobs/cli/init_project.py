"""``reprise init DIR``: a project of one's own, with a catalog every command finds from it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer

from engine.errors import RepriseError
from jobs.settings import BUNDLED_CATALOG, PROJECT_FILE

#: The example recording and query copied from the bundled catalog.
EXAMPLE_RECORDING = "vitals"
EXAMPLE_QUERY = "vitals_hr_1m"
PROJECT_TEXT = """\
# A Reprise project: every `reprise` command run in this directory reads this catalog.
catalog: schemas
"""
WORKSPACE_TEXT = """\
# Dagster: `dagster dev -w workspace.yaml` in this directory (the catalog is found from here).
load_from:
  - python_module:
      module_name: orchestration.definitions
      working_directory: .
"""
GITIGNORE_TEXT = "warehouse/\n.dagster_home/\n"


class ProjectError(RepriseError):
    """A project directory that cannot be made; the message names it."""


def make_project(directory: Path, bundled: Path = BUNDLED_CATALOG) -> list[Path]:
    """Write a project in ``directory`` (new or empty): the example recording and query of
    ``bundled`` in ``schemas/``, the project file, ``workspace.yaml`` and ``.gitignore``; the
    files written. Nothing is left behind when a file cannot be written."""
    if directory.exists() and not directory.is_dir():
        raise ProjectError(f"{directory}: exists and is not a directory")
    if directory.is_dir() and any(directory.iterdir()):
        raise ProjectError(f"{directory}: exists and is not empty; give a new or empty directory")
    sources = {Path("schemas/recordings") / f"{EXAMPLE_RECORDING}.yaml":
               bundled / "recordings" / f"{EXAMPLE_RECORDING}.yaml",
               Path("schemas/queries") / f"{EXAMPLE_QUERY}.yaml":
               bundled / "queries" / f"{EXAMPLE_QUERY}.yaml"}
    texts = {Path(PROJECT_FILE): PROJECT_TEXT, Path("workspace.yaml"): WORKSPACE_TEXT,
             Path(".gitignore"): GITIGNORE_TEXT}
    written, created = [], not directory.exists()
    try:
        for relative, source in sources.items():
            (directory / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, directory / relative)
            written.append(directory / relative)
        for relative, text in texts.items():
            (directory / relative).write_text(text)
            written.append(directory / relative)
    except OSError as exc:
        _undo(directory, created)
        raise ProjectError(f"{directory}: cannot write the project: "
                           f"{exc.strerror or exc}") from None
    return written


def _undo(directory: Path, created: bool) -> None:
    """Remove what :func:`make_project` wrote in ``directory`` (empty before it started), and
    the directory itself when it made it."""
    if not directory.is_dir():
        return
    if created:
        shutil.rmtree(directory, ignore_errors=True)
        return
    for child in directory.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def init(directory: Annotated[Path, typer.Argument(
        help="A new or empty directory for the project")]) -> None:
    """Start a project: a catalog with an example recording and query, and a Dagster
    workspace; commands run in DIR use its catalog."""
    for path in make_project(directory):
        typer.echo(f"wrote {path}")
    typer.echo(f"next: cd {directory} && reprise generate {EXAMPLE_RECORDING} --events 2000 "
               f"&& reprise replay {EXAMPLE_QUERY}")

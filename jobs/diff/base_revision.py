"""``reprise diff QUERY --base REV``: the definition of QUERY at git revision REV of the
catalog's repository, replayed at the version and plan of the current definition's run."""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Callable
from pathlib import Path

import yaml

from engine.catalog import parse_query
from engine.registry import operator_for
from engine.specs import CatalogError, QuerySpec
from jobs.diff.sides import DiffError, Side, check_same_identity, replayed, side_of_run
from jobs.runs.replay import Replay
from jobs.runs.run_info import fingerprint


def _git(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True,
                          check=False)


def definition_at(query: QuerySpec, root: Path, revision: str) -> tuple[dict, str]:
    """The query file of ``query`` (in the catalog at ``root``) at git ``revision``: its parsed
    YAML, and the file's name at the revision for messages (``path@commit``)."""
    top = _git(root, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise DiffError(f"--base {revision}: the catalog {root} is not in a git repository")
    repository = Path(top.stdout.strip())
    commit = _git(repository, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    if commit.returncode != 0:
        raise DiffError(f"--base {revision}: no such revision in the catalog's repository "
                        f"{repository}")
    relative = Path(query.source).resolve().relative_to(repository.resolve()).as_posix()
    shown = _git(repository, "show", f"{commit.stdout.strip()}:{relative}")
    if shown.returncode != 0:
        raise DiffError(f"--base {revision}: {relative} does not exist at that revision")
    where = f"{relative}@{revision}"
    try:
        doc = yaml.safe_load(shown.stdout)
    except yaml.YAMLError as exc:
        raise DiffError(f"{where}: not valid YAML ({exc})") from None
    if not isinstance(doc, dict):
        raise DiffError(f"{where}: expected a mapping of query fields")
    return doc, where


def base_runner(runner: Replay, revision: str, query: QuerySpec) -> tuple[Replay, QuerySpec]:
    """A runner whose catalog holds the definition of ``query`` at ``revision`` instead of the
    current one, and that definition."""
    doc, where = definition_at(query, runner.catalog.root, revision)
    try:
        base = parse_query(doc, runner.catalog.recordings, where)
    except CatalogError as exc:
        raise DiffError(str(exc)) from None
    if base.name != query.name:
        raise DiffError(f"{where}: defines query {base.name!r}, not {query.name!r}")
    catalog = dataclasses.replace(runner.catalog,
                                  queries={**runner.catalog.queries, query.name: base})
    return dataclasses.replace(runner, catalog=catalog), base


def resolve_base(runner: Replay, name: str, revision: str, log: Callable[[str], None]
                 ) -> tuple[Side, Side]:
    """(the base side, the current side) of ``reprise diff NAME --base REVISION``: the current
    definition's latest complete run (replayed when there is none), and the base definition's
    run at its version and plan, under a run id of its own."""
    query = runner.catalog.query(name)
    base, base_query = base_runner(runner, revision, query)  # every input checked first
    check_same_identity((f"{name}@{revision}", base_query), (name, query), runner.catalog)
    current = replayed(runner, query, None, None, log)
    fp = fingerprint(base_query, operator_for(base_query, runner.catalog.recordings))
    base_info = replayed(base, base_query, current, f"{current.run_id}-base-{fp[:6]}", log)
    return (side_of_run(base, f"{name}@{revision}", base_info),
            side_of_run(runner, name, current))

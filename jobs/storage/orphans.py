"""Staged Parquet files that no version of a table's Delta log references (left by killed runs)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow.parquet as pq


def _local(table: Path, uri: str) -> Path:
    """A log entry's path (relative and URL-encoded, or an absolute URI) as a local path; a
    relative one under ``table`` (resolved) without resolving it again (a table's files are
    named by the paths its log holds, not by where links lead)."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path)).resolve()
    if parsed.scheme:
        return Path("/nonexistent-remote") / uri  # not a local file: never matches one
    return Path(os.path.normpath(table / unquote(uri)))


def referenced_files(table: Path, skip: frozenset[str] = frozenset()) -> set[Path] | None:
    """Every data file any version of ``table``'s log adds or removes (from the JSON commits
    and the checkpoints; none from the log files named in ``skip``); None when the log holds
    something this reader does not understand (then nothing may be deleted)."""
    table = table.resolve()
    log = table / "_delta_log"
    found: set[Path] = set()
    if not log.is_dir():
        return found
    for name in set(os.listdir(log)) - skip:  # (a run's log grows by commits every segment)
        entry = log / name
        if name.endswith(".json") and name[:20].isdigit():
            try:
                actions = [json.loads(line) for line in entry.read_text().splitlines()
                           if line.strip()]
            except ValueError:
                return None
            found.update(_local(table, action[kind]["path"]) for action in actions
                         for kind in ("add", "remove") if kind in action)
        elif ".checkpoint" in name and name.endswith(".parquet") and name[:20].isdigit():
            checkpoint = pq.read_table(entry)
            for kind in set(checkpoint.column_names) & {"add", "remove"}:
                found.update(_local(table, a["path"]) for a in checkpoint[kind].to_pylist()
                             if a)
        elif name.endswith((".crc", ".tmp")) or name == "_last_checkpoint" or \
                name.startswith("."):
            continue
        else:
            return None
    return found


@dataclass(frozen=True)
class Mark:
    """What a table's directory held at some moment: its ``data/`` entries and log files."""

    data: frozenset[str]
    log: frozenset[str]


def _names(directory: Path) -> frozenset[str]:
    return frozenset(os.listdir(directory)) if directory.is_dir() else frozenset()


def mark(table: Path) -> Mark:
    """The entries of ``table``'s ``data/`` and ``_delta_log/`` now (two directory listings)."""
    return Mark(_names(table / "data"), _names(table / "_delta_log"))


def remove_unreferenced(table: Path, since: Mark | None = None) -> list[Path]:
    """Delete the Parquet files under ``table/data`` that no version of its log references
    (and directories left empty); return what was deleted. With ``since``, look only at the
    ``data/`` entries made after that mark, and read only the log files written after it (no
    earlier version can reference a file staged after it): the cost does not grow with the
    table's history. Call it only while no one else writes the table (a replay holds the run's
    lock)."""
    data = table / "data"
    if not data.is_dir():
        return []
    entries = [data / name for name in sorted(_names(data) - (since.data if since else set()))]
    if not entries:
        return []
    referenced = referenced_files(table, since.log if since else frozenset())
    if referenced is None:
        return []
    files = [f for e in entries for f in ([e] if e.is_file() else sorted(e.rglob("*.parquet")))]
    resolved = table.resolve()
    removed = [f for f in files if f.name.endswith(".parquet") and f.is_file()
               and Path(os.path.normpath(resolved / f.relative_to(table))) not in referenced]
    for f in removed:
        f.unlink()
    for entry in entries:
        for directory in sorted((d for d in entry.rglob("*") if d.is_dir()), reverse=True):
            if not any(directory.iterdir()):
                directory.rmdir()
        if entry.is_dir() and not any(entry.iterdir()):
            entry.rmdir()
    return removed


def remove_leftovers(tables: Iterable[str], since: Mapping[str, Mark] | None = None
                     ) -> list[Path]:
    """:func:`remove_unreferenced` over each of a run's tables (local paths or ``file://``
    URIs), each ``since`` its mark when given; what was deleted."""
    return [f for table in tables
            for f in remove_unreferenced(Path(table.removeprefix("file://")),
                                         since[table] if since is not None else None)]


def marks(tables: Iterable[str]) -> dict[str, Mark]:
    """:func:`mark` of each of a run's tables (local paths or ``file://`` URIs)."""
    return {table: mark(Path(table.removeprefix("file://"))) for table in tables}

"""Staged Parquet files that no version of a table's Delta log references (left by killed runs)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow.parquet as pq


def _local(table: Path, uri: str) -> Path:
    """A log entry's path (relative and URL-encoded, or an absolute URI) as a local path."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path)).resolve()
    if parsed.scheme:
        return Path("/nonexistent-remote") / uri  # not a local file: never matches one
    return (table / unquote(uri)).resolve()


def referenced_files(table: Path) -> set[Path] | None:
    """Every data file any version of ``table``'s log adds or removes (from the JSON commits
    and the checkpoints); None when the log holds something this reader does not understand
    (then nothing may be deleted)."""
    log = table / "_delta_log"
    found: set[Path] = set()
    if not log.is_dir():
        return found
    for entry in log.iterdir():
        name = entry.name
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


def remove_unreferenced(table: Path) -> list[Path]:
    """Delete the Parquet files under ``table/data`` that no version of its log references
    (and directories left empty); return what was deleted. Call it only while no one else
    writes the table (a replay holds the run's lock)."""
    data = table / "data"
    if not data.is_dir():
        return []
    referenced = referenced_files(table)
    if referenced is None:
        return []
    removed = [f for f in sorted(data.rglob("*.parquet"))
               if f.is_file() and f.resolve() not in referenced]
    for f in removed:
        f.unlink()
    for directory in sorted((d for d in data.rglob("*") if d.is_dir()), reverse=True):
        if not any(directory.iterdir()):
            directory.rmdir()
    return removed


def remove_leftovers(tables: Iterable[str]) -> list[Path]:
    """:func:`remove_unreferenced` over each of a run's tables (local paths or ``file://``
    URIs); what was deleted."""
    return [f for table in tables
            for f in remove_unreferenced(Path(table.removeprefix("file://")))]

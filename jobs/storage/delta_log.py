"""Reading a local Delta table's JSON log entries directly (a few new versions, without opening
the table, which replays its whole log)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote


def log_actions(root: str, first: int, last: int) -> list[tuple[int, dict]] | None:
    """The actions of the log entries of versions ``first .. last`` of the table at the local
    path ``root``, as (version, action) in order; None when an entry is not a local file."""
    actions = []
    for version in range(first, last + 1):
        entry = Path(root) / "_delta_log" / f"{version:020d}.json"
        if not entry.is_file():
            return None
        actions += [(version, json.loads(line)) for line in entry.read_text().splitlines()
                    if line.strip()]
    return actions


def first_added(root: str, first: int, last: int) -> dict[str, int] | None:
    """The first version of ``first .. last`` whose log entry adds each path (keyed as the entry
    names it, and percent-decoded) of the table at the local path ``root``; None when an entry
    is not a local file."""
    actions = log_actions(root, first, last)
    if actions is None:
        return None
    added: dict[str, int] = {}
    for version, action in actions:
        if "add" in action:
            path = action["add"]["path"]
            added.setdefault(path, version)
            added.setdefault(unquote(path), version)
    return added

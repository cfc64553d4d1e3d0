"""Reading a local Delta table's JSON log entries directly (a few new versions, without opening
the table, which replays its whole log)."""

from __future__ import annotations

import json
from pathlib import Path


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

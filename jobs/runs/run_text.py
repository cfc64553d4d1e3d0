"""The text of ``run.json``: one field a line, each value compact JSON.

A continued run's lists (input files, cut points, segments, engines) gain entries with every
segment and are written a few times a segment, so a long ``follow`` would spend more on encoding
them with every segment. Each list's items are encoded once: the items a list shares, from its
start, with what was last written to the same file are taken from then (compared with a copy
kept of them, so that an item changed in place is encoded again). The text is exactly that of
``json.dumps`` of each value.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, fields
from pathlib import Path

from jobs.runs.run_info import RunInfo

#: The ``run.json`` files whose encoded lists are kept (the oldest goes first).
KEPT_FILES = 16


@dataclass
class EncodedList:
    """A list's items as last written (copies) and their JSON texts."""

    items: list
    texts: list[str]


_ENCODED: dict[Path, dict[str, EncodedList]] = {}


def encoded(value: object) -> str:
    """``value`` as compact JSON (anything JSON does not know as its ``str``)."""
    return json.dumps(value, default=str)


def encoded_list(run_file: Path, name: str, value: list) -> str:
    """``encoded(value)``, reusing the texts of the leading items it shares with the list
    ``name`` last written to ``run_file``."""
    kept = _ENCODED.setdefault(run_file, {}).get(name)
    same = 0
    if kept is not None:
        limit = min(len(kept.items), len(value))
        if kept.items[:limit] == value[:limit]:  # (the usual case, compared in one C loop)
            same = limit
        else:
            while kept.items[same] == value[same]:
                same += 1
        kept.items[same:], kept.texts[same:] = [], []
    else:
        kept = _ENCODED[run_file][name] = EncodedList([], [])
    for item in value[same:]:
        kept.items.append(copy.deepcopy(item))
        kept.texts.append(encoded(item))
    return "[" + ", ".join(kept.texts) + "]"


def run_text(run_file: Path, info: RunInfo) -> str:
    """The text of ``run_file`` (a ``run.json``) holding ``info``."""
    if run_file not in _ENCODED and len(_ENCODED) >= KEPT_FILES:
        del _ENCODED[next(iter(_ENCODED))]
    lines = []
    for f in fields(info):
        value = getattr(info, f.name)
        text = (encoded_list(run_file, f.name, value) if isinstance(value, list)
                else encoded(value))
        lines.append(f"{json.dumps(f.name)}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}\n"

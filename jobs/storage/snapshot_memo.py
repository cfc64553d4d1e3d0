"""Memos of the delta-rs storage (file lists and snapshots of past versions), keyed by table
and version, each with a digest of the table's first log entry beside the value: a version never
changes, but a table can be removed and made again at its path."""

from __future__ import annotations

import hashlib

from jobs.storage.delta_log import log_dir, read_log_file

#: How many file lists of versions, and snapshots of past versions, the delta-rs storage keeps.
KEPT = 16


def table_made(root: str) -> bytes | None:
    """A digest of the table's first log entry, which holds the table's id: it tells a table
    removed and made again at ``root``; None without such an entry (it is gone, or unreadable)."""
    try:
        first = read_log_file(f"{log_dir(root)}/{0:020d}.json")
        return hashlib.blake2b(first, digest_size=16).digest()
    except OSError:
        return None


def recall(memo: dict, root: str, version: int) -> object | None:
    """What ``memo`` keeps for version ``version`` of the table at ``root``, if that table is
    the one it was kept for (see :func:`table_made`); the first log entry is read only when
    ``memo`` keeps something for that version."""
    kept = memo.get((root, version))
    return kept[1] if kept is not None and kept[0] == table_made(root) else None


def keep(memo: dict, root: str, version: int, made: bytes, value: object) -> None:
    """Keep ``value`` for version ``version`` of the table at ``root`` (``made``: its
    :func:`table_made`) in ``memo``, which keeps the last :data:`KEPT` (the oldest goes)."""
    if len(memo) >= KEPT:
        del memo[next(iter(memo))]
    memo[root, version] = (made, value)

"""One ``record`` as an all-or-nothing change of two Delta tables: a recording and its quarantine.

The protocol, correct whatever instant the process is killed at:

1. The quarantined rows of all the files go to ``quarantine/<name>`` in one commit whose metadata
   names a fresh record id (``reprise.record``).
2. Their good rows go to ``recordings/<name>`` in one commit with the same id, both in its
   metadata and as a Delta application transaction (``reprise.record/<id>``, kept by checkpoints),
   and the files' names and sha256 (``reprise.files``). This commit is the commit point.

A quarantine commit whose id has no recording transaction is an *orphan*: its process died
between the two commits. :func:`quarantine_rows` leaves an orphan's rows out, and
:func:`roll_back_orphans`, which every ``record`` runs before writing, removes them (one
quarantine commit with ``reprise.rollback``). Two ``record`` commands on one recording at the same
time are not supported: each would take the other's pending quarantine commit for an orphan.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa

from jobs.recordings.ingest import QUARANTINE_SCHEMA
from jobs.storage import DeltaStorage, Txn

RECORD_KEY = "reprise.record"
FILES_KEY = "reprise.files"
ROLLBACK_KEY = "reprise.rollback"


def new_record_id() -> str:
    """A fresh id for one ``record`` (bookkeeping only: it never reaches a recording's rows)."""
    return uuid.uuid4().hex


def record_txn(record_id: str) -> Txn:
    """The application transaction of a record's commit point on the recording."""
    return Txn(app_id=f"{RECORD_KEY}/{record_id}", version=0)


@dataclass(frozen=True)
class Orphan:
    """A quarantine commit whose record never reached the recording, and its files still live."""

    record_id: str
    version: int
    files: tuple[str, ...]


def _committed(storage: DeltaStorage, recording: str, record_id: str) -> bool:
    return (storage.exists(recording)
            and storage.txn_version(recording, record_txn(record_id).app_id) is not None)


def _paths(storage: DeltaStorage, path: str, version: int) -> set[str]:
    return {f.path for f in storage.live_files(path, version)} if version >= 0 else set()


def orphans(storage: DeltaStorage, recording: str, quarantine: str) -> list[Orphan]:
    """The quarantine commits whose record id has no commit on ``recording``, oldest first."""
    if not storage.exists(quarantine):
        return []
    recorded = set()
    if storage.exists(recording):
        recorded = {storage.commit_metadata(e).get(RECORD_KEY)
                    for e in storage.history(recording)}
    live = {f.path for f in storage.live_files(quarantine)}
    history = [(int(e["version"]), storage.commit_metadata(e)) for e in storage.history(quarantine)]
    rolled_back = {i for _, meta in history for i in meta.get(ROLLBACK_KEY, "").split(",")}
    found = []
    for version, meta in history:
        record_id = meta.get(RECORD_KEY)
        if record_id is None or record_id in recorded or record_id in rolled_back:
            continue
        added = _paths(storage, quarantine, version) - _paths(storage, quarantine, version - 1)
        still = tuple(sorted(added & live))
        # the transaction is the proof that survives log clean-up: checked only for candidates
        if still and not _committed(storage, recording, record_id):
            found.append(Orphan(record_id, version, still))
    return sorted(found, key=lambda o: o.version)


def roll_back_orphans(storage: DeltaStorage, recording: str, quarantine: str) -> int | None:
    """Remove the rows of orphaned quarantine commits in one commit; its version, or None."""
    found = orphans(storage, recording, quarantine)
    if not found:
        return None
    return storage.commit_files(
        quarantine, [], storage.schema(quarantine),
        remove=[f for o in found for f in o.files],
        metadata={ROLLBACK_KEY: ",".join(o.record_id for o in found)}).version


def quarantine_rows(storage: DeltaStorage, recording: str, quarantine: str) -> pa.Table:
    """The quarantine table's rows without those of orphaned commits (empty when no table)."""
    if not storage.exists(quarantine):
        return QUARANTINE_SCHEMA.empty_table()
    hidden = {f for o in orphans(storage, recording, quarantine) for f in o.files}
    files = [f.path for f in storage.live_files(quarantine) if f.path not in hidden]
    table_schema = storage.schema(quarantine)
    if not files:
        return table_schema.empty_table()
    return pa.concat_tables(storage.read_file(f, schema=table_schema) for f in files)


@dataclass(frozen=True)
class RecordedFile:
    """A file as the commit point of its record lists it."""

    source: str
    sha256: str
    rows: int
    recorded: int
    quarantined: int


def files_metadata(files: Iterable[RecordedFile]) -> str:
    """The ``reprise.files`` value of a commit point."""
    return json.dumps([f.__dict__ for f in files], separators=(",", ":"))


def recorded_hashes(storage: DeltaStorage, recording: str) -> dict[str, int]:
    """sha256 of every file recorded so far -> the newest recording version that holds it."""
    if not storage.exists(recording):
        return {}
    found: dict[str, int] = {}
    for entry in storage.history(recording):  # newest first
        for f in json.loads(storage.commit_metadata(entry).get(FILES_KEY) or "[]"):
            found.setdefault(f["sha256"], int(entry["version"]))
    return found

"""The log entries the delta-rs storage writes itself for plain appends and new tables
(one JSON action a line, as delta-rs writes them; see :mod:`jobs.storage.delta_rs`)."""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Schema, Transaction

from jobs.storage.base import StagedFile, Txn
from jobs.storage.filesystems import create_object
from jobs.storage.locations import is_remote, local_path, names

#: Relative data file paths a log entry can name as they are (no character to percent-encode).
PLAIN_PATH = re.compile(r"[A-Za-z0-9._/-]+")


#: delta-rs's checkpoint interval of a table without ``delta.checkpointInterval``.
CHECKPOINT_INTERVAL = 100


def checkpoint_interval(dt: DeltaTable) -> int:
    """Every how many versions delta-rs checkpoints ``dt`` after a commit (it does after the
    commit of a version ``v`` with ``v + 1`` a multiple)."""
    return int(dt.metadata().configuration.get("delta.checkpointInterval")
               or CHECKPOINT_INTERVAL)


def create_entry(path: str, text: str) -> bool:
    """Write the local file ``path`` whole if there is none yet (a temporary file linked into
    place: readers never see a part of it; on an object store one conditional put, see
    :func:`~jobs.storage.filesystems.create_object`); False when there is one."""
    if is_remote(path):
        return create_object(path, text.encode())
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"  # a name only
    with open(tmp, "w") as out:
        out.write(text)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)
    return True


def no_log(root: str) -> bool:
    """True when the table directory ``root`` holds no log at all (no ``_delta_log``, or an
    empty one): a first log entry made there starts the table. On an object store: no object
    under the log's prefix (one listing)."""
    if is_remote(root):
        return not names(f"{root}/_delta_log")
    try:
        with os.scandir(f"{root}/_delta_log") as entries:
            return next(entries, None) is None
    except FileNotFoundError:
        return True


def relative_path(path: str, root: str) -> str:
    """A table file's path as the Delta log names it: relative to the table's root when it is
    inside it (local paths and URIs alike), else the path itself."""
    path, root = local_path(path), local_path(root).rstrip("/")
    if path.startswith(root + "/"):
        return path[len(root) + 1:]
    return path if "://" in path else os.path.relpath(path, root)


def commit_info(operation: str, parameters: dict[str, str],
                 metadata: Mapping[str, str] | None, now_ms: int) -> dict:
    """A log entry's ``commitInfo`` action, as delta-rs writes it, with the commit metadata."""
    return {"commitInfo": {"timestamp": now_ms, "operation": operation,
                           "operationParameters": parameters, "engineInfo": "reprise",
                           **dict(metadata or {})}}


def change_actions(paths: Sequence[str], files: Sequence[StagedFile], removed: Sequence[str],
             txn: Txn | None, now_ms: int) -> list[dict]:
    """The actions of a log entry that adds ``files`` (at ``paths``, relative), removes
    ``removed`` and records ``txn``, as delta-rs writes them."""
    lines: list[dict] = [
        {"add": {"path": p, "partitionValues": {}, "size": f.size, "modificationTime": now_ms,
                 "dataChange": True,
                 "stats": f.stats or json.dumps({"numRecords": f.num_records})}}
        for p, f in zip(paths, files, strict=True)]
    lines += [{"remove": {"path": p, "dataChange": True, "deletionTimestamp": now_ms,
                          "extendedFileMetadata": False}} for p in removed]
    if txn is not None:
        lines.append({"txn": {"appId": txn.app_id, "version": txn.version}})
    return lines


def table_entry(root: str, schema_json: str, paths: Sequence[str], files: Sequence[StagedFile],
                txn: Txn | None, metadata: Mapping[str, str] | None, now_ms: int) -> list[dict]:
    """The actions of version 0 of a new table at ``root`` with schema ``schema_json``
    and ``files`` (at ``paths``, relative), as delta-rs's ``create_table_with_add_actions``
    writes them (default protocol, no partitions, no properties)."""
    protocol = {"minReaderVersion": 1, "minWriterVersion": 2}
    meta = {"id": str(uuid.uuid4()), "name": None, "description": None,
            "format": {"provider": "parquet", "options": {}}, "schemaString": schema_json,
            "partitionColumns": [], "createdTime": now_ms, "configuration": {}}
    info = commit_info("CREATE TABLE", {
        "metadata": compact(meta), "mode": "ErrorIfExists",
        "location": f"{root}/" if is_remote(root) else f"file://{root}/",
        "protocol": compact(protocol)}, metadata, now_ms)
    return [info, {"protocol": protocol}, {"metaData": meta},
            *change_actions(paths, files, [], txn, now_ms)]


def compact(value: dict) -> str:
    """``value`` as JSON text without spaces (as delta-rs nests JSON in ``commitInfo``)."""
    return json.dumps(value, separators=(",", ":"))


def entry_text(lines: list[dict]) -> str:
    """A log entry's text: one JSON action per line."""
    return "".join(json.dumps(line) + "\n" for line in lines)


@dataclass(frozen=True)
class Appends:
    """A table's latest version, written by this process: the app transactions of its appends
    past the open handle's version (when ``made`` is None), or of all its commits since it made
    the table with the Delta schema ``made`` (default protocol, no partitions, no properties)."""

    version: int
    txns: dict[str, int]
    made: str | None = None


def appends_plainly(dt: DeltaTable, schema: pa.Schema, removes: bool) -> bool:
    """Whether an append of files of ``schema`` to ``dt`` (that ``removes`` files) needs
    nothing of a writer but its log entry: writer protocol 2 at most without writer
    features, no column invariants, the table's schema, no partitions (and not an
    append-only table)."""
    proto = dt.protocol()
    if proto.min_writer_version > 2 or proto.writer_features:
        return False
    meta = dt.metadata()
    table_schema = dt.schema()
    if meta.partition_columns or any("delta.invariants" in (f.metadata or {})
                                     for f in table_schema.fields):
        return False
    if removes and meta.configuration.get("delta.appendOnly", "").lower() == "true":
        return False
    return table_schema.to_json() == Schema.from_arrow(schema).to_json()


def commit_properties(txn: Txn | None, metadata: Mapping[str, str] | None) -> CommitProperties:
    """delta-rs's properties of a commit that records ``txn`` and carries ``metadata``."""
    return CommitProperties(
        custom_metadata=dict(metadata or {}) or None,
        app_transactions=[Transaction(app_id=txn.app_id, version=txn.version)] if txn else None,
    )

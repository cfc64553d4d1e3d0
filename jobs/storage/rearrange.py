"""A commit that rearranges a table's data files without changing its rows (``dataChange``
false, as Delta's OPTIMIZE does): each removed file is replaced by one added file holding the same
rows in the same arrival order. The commit's metadata maps each removed file to its replacement
(:data:`REARRANGED_KEY`), so that a reader pinned to the old files (a run to continue) finds
them (:func:`rearranged_files`). The commit is made through delta-rs whichever backend wrote
the table (both read it; delta-spark finds the mapping among the commit's fields, see
:meth:`~jobs.storage.DeltaStorage.commit_metadata`)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

import pyarrow as pa
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError
from deltalake.transaction import AddAction, RemoveAction

from jobs.storage.base import DeltaStorage, StagedFile, StorageError
from jobs.storage.delta_log import LoggedCommit
from jobs.storage.locations import local_path
from jobs.storage.log_entries import commit_properties, relative_path

#: Commit metadata of a rearranging commit: JSON object, removed file -> its replacement (paths
#: relative to the table's root).
REARRANGED_KEY = "reprise.rearranged"


def commit_rearranged(path: str, replaced: Mapping[str, StagedFile], schema: pa.Schema,
                      metadata: Mapping[str, str]) -> int:
    """Replace each live data file of the table at ``path`` (a key of ``replaced``, named as
    :meth:`~jobs.storage.DeltaStorage.live_files` names it) by its staged file in one commit
    with ``dataChange`` false; the new version."""
    root = local_path(path).rstrip("/")
    now_ms = int(time.time() * 1000)  # file bookkeeping only; never reaches operator output
    moves = {relative_path(old, root): relative_path(new.path, root)
             for old, new in replaced.items()}
    actions: list[AddAction | RemoveAction] = [
        AddAction(path=moves[relative_path(old, root)], size=new.size, partition_values={},
                  modification_time=now_ms, data_change=False,
                  stats=new.stats or json.dumps({"numRecords": new.num_records}))
        for old, new in replaced.items()]
    actions += [RemoveAction(path=old, data_change=False, deletion_timestamp=now_ms)
                for old in moves]
    props = commit_properties(None, {**metadata, REARRANGED_KEY: json.dumps(moves)})
    try:
        dt = DeltaTable(root)
        dt.create_write_transaction(actions, mode="append", schema=schema,
                                    commit_properties=props)
        dt.update_incremental()
    except DeltaError as exc:
        raise StorageError(f"cannot rearrange the files of Delta table {path}: {exc}") from exc
    return dt.version()


def rearranging(storage: DeltaStorage, entry: dict) -> dict[str, str]:
    """The files a :meth:`~jobs.storage.DeltaStorage.history` entry's commit rearranged (removed
    -> replacement, relative paths; none for another commit)."""
    return json.loads(storage.commit_metadata(entry).get(REARRANGED_KEY) or "{}")


def rearranged_files(storage: DeltaStorage, commits: list[LoggedCommit]) -> dict[str, str]:
    """Each data file of a table that ``commits`` (its commits after a version, in order:
    :meth:`~jobs.storage.DeltaStorage.commits`) rearranged -> its replacement after the last of
    them (relative paths)."""
    moved: dict[str, str] = {}
    for commit in commits:
        step = rearranging(storage, commit.info)
        moved = {was: step.get(now, now) for was, now in moved.items()}
        for was, now in step.items():
            moved.setdefault(was, now)
    return moved

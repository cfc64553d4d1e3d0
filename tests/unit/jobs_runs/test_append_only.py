"""Whether a recording's later versions only appended rows (``run_segments.append_only``, the
check that decides whether a run can be continued): a commit that removes rows is not an append,
whatever its log's operation says; one that only rearranges files is (when allowed)."""

from __future__ import annotations

import os

import pyarrow as pa

from jobs.runs import run_segments
from jobs.storage.delta_rs import DeltaRsStorage
from jobs.storage.rearrange import commit_rearranged
from jobs.storage.staging import stage_table

SCHEMA = pa.schema([("n", pa.int64())])


def _recording(tmp_path, commits: int) -> tuple[DeltaRsStorage, str]:
    """A table of ``commits`` plain appends (versions 0 .. commits - 1), written by the driver's
    backend (no Spark needed for these commits)."""
    storage, path = DeltaRsStorage(spark=None), str(tmp_path / "recording")
    for i in range(commits):
        storage.commit_files(path, [_staged(storage, path, [i])], SCHEMA)
    return storage, path


def append_only(storage: DeltaRsStorage, path: str, old: int, new: int,
                rearranged: bool = True) -> str | None:
    """``run_segments.append_only`` of versions ``old+1 .. new``, their commits read from the
    log as a continuation reads them."""
    return run_segments.append_only(storage, path, old, new,
                                    storage.commits(path, old + 1, new), rearranged)


def _staged(storage: DeltaRsStorage, path: str, values: list[int]):
    return stage_table(storage, path, pa.table({"n": values}, schema=SCHEMA))


def test_plain_appends_are_appends(tmp_path):
    storage, path = _recording(tmp_path, 3)
    assert append_only(storage, path, 0, 2) is None
    assert append_only(storage, path, 2, 2) is None


def test_a_commit_labelled_an_append_that_removes_rows_is_not_an_append(tmp_path):
    """``generate --replace``'s commit: the new events and the removal of the old files, which
    its log labels ``WRITE (Append)``."""
    storage, path = _recording(tmp_path, 2)
    old = [f.path for f in storage.live_files(path)]
    storage.commit_files(path, [_staged(storage, path, [7])], SCHEMA, remove=old)
    storage.commit_files(path, [_staged(storage, path, [8])], SCHEMA)
    latest = storage.history(path, limit=2)[1]
    assert (latest["operation"], latest["operationParameters"]["mode"]) == ("WRITE", "Append")
    why = append_only(storage, path, 1, 3)
    assert why is not None and "version 2 " in why and "removed rows" in why
    assert os.path.basename(os.path.dirname(min(old))) in why  # (names a removed file)
    assert append_only(storage, path, 2, 3) is None  # (the later append alone is one)


def test_a_commit_that_removes_rows_without_adding_any_is_not_an_append(tmp_path):
    storage, path = _recording(tmp_path, 2)
    gone = storage.live_files(path)[0].path
    storage.commit_files(path, [], SCHEMA, remove=[gone])
    assert "removed rows" in (append_only(storage, path, 1, 2) or "")


def test_a_commit_that_only_rearranges_files_is_allowed_when_asked(tmp_path):
    storage, path = _recording(tmp_path, 2)
    first = storage.live_files(path)[0]
    rows = storage.read_file(first.path, schema=SCHEMA)
    commit_rearranged(path, {first.path: _staged(storage, path, rows.column("n").to_pylist())},
                      SCHEMA, {"reprise.optimize": "n"})
    assert append_only(storage, path, 1, 2) is None
    why = append_only(storage, path, 1, 2, rearranged=False)
    assert why is not None and "rearranged" in why


def test_a_missing_log_entry_is_not_taken_for_an_append(tmp_path):
    storage, path = _recording(tmp_path, 3)
    os.remove(f"{path}/_delta_log/{1:020d}.json")
    why = append_only(storage, path, 0, 2)
    assert why is not None and "log entry is missing" in why

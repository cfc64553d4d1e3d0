"""A run's commits to a Delta table on an S3-compatible store (the tests' moto server): each is
one log entry the delta-rs backend writes itself with a conditional put, which delta-rs reads as
its own; a version another writer took first is committed after it; the store refuses a second
put of an entry."""

from __future__ import annotations

import json

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from jobs.storage import Txn
from jobs.storage.filesystems import create_object
from jobs.storage.locations import filesystem
from jobs.storage.staging import stage_table

SCHEMA = pa.schema([("n", pa.int64())])


def numbers(values: list[int]) -> pa.Table:
    return pa.table({"n": pa.array(values, pa.int64())})


def entry(path: str, version: int) -> list[dict]:
    """The actions of the table's log entry of ``version``."""
    fs, inner = filesystem(f"{path}/_delta_log/{version:020d}.json")
    with fs.open_input_stream(inner) as stream:
        return [json.loads(line) for line in stream.read().decode().splitlines()]


def test_a_runs_commits_on_s3_are_the_backends_own_log_entries(storage, s3_warehouse):
    path = f"{s3_warehouse.root}/runs/r/output"
    for i in range(3):
        staged = [stage_table(storage, path, numbers([i]))]
        assert storage.commit_files(path, staged, SCHEMA, txn=Txn("r/output", i),
                                    metadata={"reprise.batch": str(i)}).version == i
    assert entry(path, 2)[0]["commitInfo"]["engineInfo"] == "reprise"  # (not delta-rs's)
    assert storage.commit_files(path, [], SCHEMA, txn=Txn("r/output", 2)).skipped
    # the store refuses a second put of an entry: of two writers, one wins
    assert not create_object(f"{path}/_delta_log/{2:020d}.json", b"{}")
    assert entry(path, 2)[0]["commitInfo"]["engineInfo"] == "reprise"

    write_deltalake(path, numbers([1000]), mode="append")  # another writer: version 3
    staged = [stage_table(storage, path, numbers([3]))]
    assert storage.commit_files(path, staged, SCHEMA, txn=Txn("r/output", 3)).version == 4
    dropped = staged[0].path
    staged = [stage_table(storage, path, numbers([4]))]
    assert storage.commit_files(path, staged, SCHEMA, txn=Txn("r/output", 4),
                                remove=[dropped]).version == 5
    actions = entry(path, 5)
    assert actions[0]["commitInfo"]["engineInfo"] == "reprise"
    assert [a["remove"]["path"] for a in actions if "remove" in a] == [
        dropped[len(path) + 1:]]

    fresh = DeltaTable(path)
    assert fresh.version() == storage.version(path) == 5
    assert fresh.transaction_version("r/output") == 4
    values = fresh.to_pyarrow_dataset().to_table().column("n").to_pylist()
    assert sorted(values) == [0, 1, 2, 4, 1000]

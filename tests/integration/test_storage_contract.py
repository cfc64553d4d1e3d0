"""One contract for both Delta backends (delta-rs always; delta-spark when its jars load).

The delta-rs-only tests at the end cover that backend's guard against table features it cannot
read correctly, and the validity of the Delta log it writes.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import CommitProperties, DeltaTable, Schema, Transaction, write_deltalake
from deltalake.transaction import AddAction, create_table_with_add_actions
from pyspark.sql import DataFrame

from jobs.runtime.spark_session import delta_jars_loadable
from jobs.settings import SettingsError
from jobs.storage import (
    FILE_COLUMN,
    ROW_COLUMN,
    DeltaStorage,
    StagedFile,
    StorageError,
    Txn,
    UnsupportedTableFeature,
    WriteResult,
    file_stats,
    open_storage,
)
from jobs.storage.base import unsupported_features

SCHEMA = pa.schema([
    pa.field("ts", pa.timestamp("us", tz="UTC")),
    pa.field("n", pa.int64()),
    pa.field("x", pa.float64()),
    pa.field("k", pa.string()),
])
T0 = datetime(2024, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


def batch(ns: list[int], keys: list[str | None] | None = None) -> pa.Table:
    """Rows with unique ``n``, microsecond timestamps, and some nulls (``x``; ``k`` by default)."""
    if keys is None:
        keys = [None if n % 7 == 6 else "abc"[n % 3] for n in ns]
    return pa.table({
        "ts": [T0 + timedelta(seconds=n, microseconds=n) for n in ns],
        "n": ns,
        "x": [None if n % 5 == 4 else n * 0.5 for n in ns],
        "k": keys,
    }, schema=SCHEMA)


def rows(data: pa.Table | DataFrame) -> list[dict]:
    """The rows of the test schema, sorted by ``n``."""
    if isinstance(data, DataFrame):
        data = data.toArrow()
    return sorted(data.select(SCHEMA.names).to_pylist(), key=lambda r: r["n"])


def table_path(tmp_path: Path, name: str = "t") -> str:
    return str(tmp_path / name)


@pytest.fixture
def backend(backend_storage) -> DeltaStorage:
    """Each backend in turn (``backend_storage`` in tests/conftest.py)."""
    return backend_storage


def test_the_project_delta_jars_load(spark):
    """The suite's session carries the project's pinned Delta jars (tests/conftest.py), so no
    delta-spark test skips for missing jars."""
    assert delta_jars_loadable(spark), "the project's Delta jars did not load (make jars)"
    assert open_storage(spark, "delta-spark").name == "delta-spark"


def stage(storage: DeltaStorage, path: str, tag: str, parts: list[pa.Table]) -> list[StagedFile]:
    """Write ``parts`` as Parquet files into the staging dir, as a worker would."""
    target = storage.staging_dir(path, tag)
    os.makedirs(target, exist_ok=True)
    staged = []
    for i, part in enumerate(parts):
        f = f"{target}/part-{i:05d}.parquet"
        footer: list[pq.FileMetaData] = []
        pq.write_table(part, f, metadata_collector=footer)
        count, stats = file_stats(f)
        assert file_stats(f, footer[0]) == (count, stats)  # the writer's footer is the file's
        staged.append(StagedFile(path=f, size=os.path.getsize(f), num_records=count, stats=stats))
    return staged


# --------------------------------------------------------------------------- contract


def test_write_then_read_round_trips(backend, tmp_path):
    path = table_path(tmp_path)
    data = batch(list(range(10)))
    result = backend.write(data, path)
    assert result == WriteResult(version=0)
    assert backend.exists(path)
    assert rows(backend.read(path)) == rows(data)
    assert rows(backend.read_arrow(path)) == rows(data)
    assert backend.read_arrow(path).num_rows == 10
    assert backend.schema(path) == SCHEMA
    assert backend.read(path).columns == SCHEMA.names
    # The timestamps kept their microseconds and their instant.
    assert rows(backend.read_arrow(path))[1]["ts"] == datetime(2024, 3, 1, 12, 0, 1, 123457,
                                                               tzinfo=UTC)


def test_append_increments_version_and_time_travels(backend, tmp_path):
    path = table_path(tmp_path)
    first, second = batch([0, 1, 2]), batch([3, 4])
    assert backend.write(first, path).version == 0
    assert backend.version(path) == 0
    assert backend.write(second, path, mode="append").version == 1
    assert backend.version(path) == 1
    assert rows(backend.read(path, 0)) == rows(first)
    assert rows(backend.read_arrow(path, 0)) == rows(first)
    everything = rows(pa.concat_tables([first, second]))
    assert rows(backend.read(path)) == everything
    assert rows(backend.read(path, 1)) == everything
    assert rows(backend.read_arrow(path)) == everything


def test_overwrite_replaces_rows_and_keeps_old_version(backend, tmp_path):
    path = table_path(tmp_path)
    old, new = batch([0, 1, 2, 3]), batch([10, 11])
    backend.write(old, path)
    assert backend.write(new, path, mode="overwrite").version == 1
    assert rows(backend.read(path)) == rows(new)
    assert rows(backend.read_arrow(path)) == rows(new)
    assert rows(backend.read(path, 0)) == rows(old)
    assert rows(backend.read_arrow(path, 0)) == rows(old)


def test_overwrite_by_predicate_replaces_only_matching_rows(backend, tmp_path):
    path = table_path(tmp_path)
    old = batch([0, 1, 2, 3, 4, 5], keys=["a", "b", "a", "c", "b", "a"])
    backend.write(old, path)
    replacement = batch([20, 21], keys=["a", "a"])
    assert backend.write(replacement, path, mode="overwrite", predicate="k = 'a'").version == 1
    kept = old.filter(pc.not_equal(old["k"], "a"))
    expected = rows(pa.concat_tables([kept, replacement]))
    assert [r["n"] for r in expected] == [1, 3, 4, 20, 21]
    assert rows(backend.read(path)) == expected
    assert rows(backend.read_arrow(path)) == expected
    assert rows(backend.read_arrow(path, 0)) == rows(old)


def test_txn_write_happens_at_most_once(backend, tmp_path):
    path = table_path(tmp_path)
    data = batch([0, 1, 2])
    assert not backend.exists(path)
    first = backend.write(data, path, txn=Txn("app", 3))
    assert first == WriteResult(version=0)
    assert backend.txn_version(path, "app") == 3
    assert backend.txn_version(path, "other") is None

    again = backend.write(data, path, txn=Txn("app", 3))
    assert again == WriteResult(version=None, skipped=True)
    assert backend.read_arrow(path).num_rows == 3
    assert backend.version(path) == 0

    lower = backend.write(batch([7]), path, txn=Txn("app", 2))
    assert lower.skipped
    assert backend.read_arrow(path).num_rows == 3
    assert backend.txn_version(path, "app") == 3

    higher = backend.write(batch([8]), path, txn=Txn("app", 4))
    assert higher == WriteResult(version=1)
    assert backend.txn_version(path, "app") == 4
    assert [r["n"] for r in rows(backend.read(path))] == [0, 1, 2, 8]

    # Another application's transaction is independent.
    assert not backend.write(batch([9]), path, txn=Txn("other", 1)).skipped
    assert backend.txn_version(path, "app") == 4
    assert backend.txn_version(path, "other") == 1


def test_commit_files_adds_removes_and_is_idempotent(backend, tmp_path):
    path = table_path(tmp_path)
    part0, part1 = batch([0, 1, 2]), batch([3, 4])
    staged = stage(backend, path, "b1", [part0, part1])
    assert [f.num_records for f in staged] == [3, 2]
    assert json.loads(staged[0].stats)["numRecords"] == 3

    first = backend.commit_files(path, staged, SCHEMA, txn=Txn("loader", 1),
                                 metadata={"reprise.batch": "1"})
    assert first == WriteResult(version=0)
    assert rows(backend.read(path)) == rows(pa.concat_tables([part0, part1]))
    assert rows(backend.read_arrow(path)) == rows(pa.concat_tables([part0, part1]))
    live = backend.live_files(path)
    assert [f.rows for f in live] == [3, 2]
    assert live == sorted(live)
    assert all(f.size == os.path.getsize(f.path) for f in live)
    assert backend.txn_version(path, "loader") == 1

    # Second commit: one new file, and part0's file dropped in the same commit.
    part2 = batch([5, 6, 7, 8])
    added = stage(backend, path, "b2", [part2])
    dropped = next(f.path for f in live if f.rows == 3)
    second = backend.commit_files(path, added, SCHEMA, txn=Txn("loader", 2), remove=[dropped])
    assert second.version == 1 and not second.skipped
    expected = rows(pa.concat_tables([part1, part2]))
    assert rows(backend.read(path)) == expected
    assert rows(backend.read_arrow(path)) == expected
    assert sorted(f.rows for f in backend.live_files(path)) == [2, 4]
    assert dropped not in {f.path for f in backend.live_files(path)}
    assert rows(backend.read_arrow(path, 0)) == rows(pa.concat_tables([part0, part1]))

    # The same transaction again changes nothing.
    repeat = backend.commit_files(path, added, SCHEMA, txn=Txn("loader", 2), remove=[dropped])
    assert repeat == WriteResult(version=None, skipped=True)
    assert backend.version(path) == 1
    assert rows(backend.read_arrow(path)) == expected

    # Zero files with a transaction still commits, recording the transaction.
    empty = backend.commit_files(path, [], SCHEMA, txn=Txn("loader", 3))
    assert empty.version == 2 and not empty.skipped
    assert backend.version(path) == 2
    assert backend.txn_version(path, "loader") == 3
    assert rows(backend.read_arrow(path)) == expected
    assert backend.commit_files(path, [], SCHEMA, txn=Txn("loader", 3)).skipped


def test_write_spark_dataframe_round_trips(backend, spark, tmp_path):
    path = table_path(tmp_path)
    data = batch(list(range(8)))
    df = spark.createDataFrame(data).repartition(2)
    assert backend.write(df, path) == WriteResult(version=0)
    assert rows(backend.read(path)) == rows(data)
    assert rows(backend.read_arrow(path)) == rows(data)
    assert backend.schema(path).names == SCHEMA.names
    assert backend.schema(path).field("ts").type == pa.timestamp("us", tz="UTC")
    more = batch([8, 9])
    assert backend.write(spark.createDataFrame(more), path, txn=Txn("df", 1)).version == 1
    assert backend.write(spark.createDataFrame(more), path, txn=Txn("df", 1)).skipped
    assert rows(backend.read(path)) == rows(pa.concat_tables([data, more]))
    assert sum(f.rows for f in backend.live_files(path)) == 10


def test_history_newest_first_with_custom_metadata(backend, tmp_path):
    path = table_path(tmp_path)
    backend.write(batch([0]), path)
    backend.write(batch([1]), path, metadata={"reprise.batch": "1"})
    backend.write(batch([2]), path, mode="overwrite")
    history = backend.history(path)
    assert [h["version"] for h in history] == [2, 1, 0]
    assert all(h["operation"] for h in history)
    assert backend.commit_metadata(history[1])["reprise.batch"] == "1"
    assert "reprise.batch" not in backend.commit_metadata(history[0])
    assert "reprise.batch" not in backend.commit_metadata(history[2])
    assert [h["version"] for h in backend.history(path, limit=2)] == [2, 1]


def test_delta_rs_checkpoints_a_table_whose_log_grew_by_every_commits(storage, tmp_path):
    path = table_path(tmp_path)
    for i in range(3):
        storage.write(batch([i]), path)
    assert not storage.checkpoint(path, 4)  # versions 0..2: 3 commits, none checkpointed yet
    storage.write(batch([3]), path)
    assert storage.checkpoint(path, 4)
    assert json.loads((Path(path) / "_delta_log" / "_last_checkpoint").read_text())["version"] == 3
    assert not storage.checkpoint(path, 4)  # nothing committed since
    storage.write(batch([4]), path)
    assert not storage.checkpoint(path, 4) and storage.version(path) == 4
    assert sorted(storage.read_arrow(path, 2).column("n").to_pylist()) == [0, 1, 2]


def test_version_with_finds_the_commit_given_the_metadata(backend, tmp_path):
    path = table_path(tmp_path)
    for b in range(3):
        backend.write(batch([b]), path, txn=Txn("run/t", b),
                      metadata={"reprise.run": "run", "reprise.batch": str(b)})
    backend.write(batch([9]), path, metadata={"reprise.run": "other", "reprise.batch": "1"})
    assert backend.version_with(path, {"reprise.run": "run", "reprise.batch": "1"}) == 1
    assert backend.version_with(path, {"reprise.run": "other", "reprise.batch": "1"}) == 3
    assert backend.version_with(path, {"reprise.run": "run", "reprise.batch": "7"}) is None


def test_files_list_live_files_with_adding_version(backend, tmp_path):
    path = table_path(tmp_path)
    backend.write(batch([0, 1, 2]), path)
    backend.write(batch([3, 4]), path)
    backend.write(batch([5, 6, 7, 8]), path)
    at0 = backend.files(path, 0)
    assert [f.commit_version for f in at0] == [0]
    files = backend.files(path, 2)
    assert [f.commit_version for f in files] == [0, 1, 2]
    assert files[0] == at0[0]
    counts = [pq.ParquetFile(f.uri).metadata.num_rows for f in files]
    assert counts == [3, 2, 4]
    for f, count in zip(files, counts, strict=True):
        assert os.path.isabs(f.uri) and not f.uri.startswith("file:")
        assert f.num_records in (None, count)
    if backend.name == "delta-rs":
        assert [f.num_records for f in files] == [3, 2, 4]
    assert {f.uri for f in files} == {f.path for f in backend.live_files(path, 2)}

    # An overwrite replaces every file: they are all added by the latest commit.
    backend.write(batch([9, 10]), path, mode="overwrite")
    assert [f.commit_version for f in backend.files(path, 3)] == [3]
    assert [f.commit_version for f in backend.files(path, 2)] == [0, 1, 2]


def test_commits_give_each_commits_entry_adds_and_removes(backend, tmp_path):
    """``commits``: each version's history entry, the files it adds (as ``live_files`` names
    them, with their rows when the stats give them) and those it removes (with their rows),
    whichever backend wrote the commits."""
    path = table_path(tmp_path)
    backend.write(batch([0, 1, 2]), path)
    backend.write(batch([3, 4]), path)
    at1 = {f.path: f.rows for f in backend.live_files(path, 1)}
    dropped = min(at1, key=at1.get)  # (the file of 2 rows)
    backend.commit_files(path, stage(backend, path, "b", [batch([5, 6, 7, 8])]), SCHEMA,
                         remove=[dropped])
    commits = backend.commits(path, 1, 2)
    assert [c.version for c in commits] == [1, 2]
    history = {e["version"]: e for e in backend.history(path)}
    assert [c.info["operation"] for c in commits] == [history[1]["operation"],
                                                       history[2]["operation"]]
    assert list(commits[0].added) == [dropped] and not commits[0].removed
    assert commits[0].added[dropped] in (None, 2)
    (new, rows_of_new), = commits[1].added.items()
    assert new in {f.path for f in backend.live_files(path, 2)} and rows_of_new in (None, 4)
    assert commits[1].removed == {dropped: True} and commits[1].rows_removed == [dropped]
    assert backend.commits(path, 1, 3) is None  # (no version 3 yet)


def test_files_of_a_table_made_again_at_its_path_are_the_new_tables(backend, tmp_path):
    """A version's files are read once per process (they never change), but a table removed
    and made again at the same path has other files under the same version numbers."""
    path = table_path(tmp_path)
    backend.write(batch([0, 1, 2]), path)
    backend.write(batch([3, 4]), path)
    before = backend.files(path, 1)
    assert backend.files(path, 1) == before  # (read again: the same)
    shutil.rmtree(path)
    backend.write(batch([5]), path)
    backend.write(batch([6, 7, 8, 9]), path)
    again = backend.files(path, 1)
    assert [pq.ParquetFile(f.uri).metadata.num_rows for f in again] == [1, 4]
    assert not {f.uri for f in again} & {f.uri for f in before}


def test_a_past_version_of_a_table_made_again_at_its_path_is_the_new_tables(backend, tmp_path):
    """A past version's snapshot never changes and is kept, but not across a table removed and
    made again at the same path."""
    path = table_path(tmp_path)
    backend.write(batch([0, 1, 2]), path)
    backend.write(batch([3]), path)
    assert backend.read_arrow(path, 0).column("n").to_pylist() == [0, 1, 2]
    shutil.rmtree(path)
    backend.write(batch([5]), path)
    backend.write(batch([6, 7]), path)
    assert backend.read_arrow(path, 0).column("n").to_pylist() == [5]


def test_a_table_of_several_chunks_is_written_in_its_row_order(backend, tmp_path):
    # (delta-rs wrote the chunks of [3], [1], [2], [5], [4] as 3, 2, 4, 1, 5: a recording's row
    # order is its arrival order)
    path = table_path(tmp_path)
    ns = [3, 1, 2, 5, 4, 9, 0]
    backend.write(pa.concat_tables([batch([n]) for n in ns]), path)
    (only,) = backend.files(path, 0)
    assert pq.read_table(only.uri).column("n").to_pylist() == ns


def test_read_positioned_gives_file_and_row_index(backend, tmp_path):
    path = table_path(tmp_path)
    backend.write(batch(list(range(5))), path)
    backend.write(batch(list(range(5, 12))), path)
    files = backend.files(path, 1)
    df = backend.read_positioned(path, 1)
    assert df.columns == [*SCHEMA.names, FILE_COLUMN, ROW_COLUMN]
    got = df.select("n", FILE_COLUMN, ROW_COLUMN).collect()
    assert sorted(r["n"] for r in got) == list(range(12))
    assert {r[FILE_COLUMN] for r in got} == {f.uri for f in files}
    assert len({(r[FILE_COLUMN], r[ROW_COLUMN]) for r in got}) == len(got)
    by_file: dict[str, dict[int, int]] = defaultdict(dict)
    for r in got:
        by_file[r[FILE_COLUMN]][r[ROW_COLUMN]] = r["n"]
    for uri, positions in by_file.items():
        on_disk = pq.read_table(uri).column("n").to_pylist()
        assert sorted(positions) == list(range(len(on_disk)))
        assert [positions[i] for i in range(len(on_disk))] == on_disk

    # Restricted to one file, and at an older version.
    only = backend.read_positioned(path, 1, files=[files[1].uri])
    assert {r[FILE_COLUMN] for r in only.select(FILE_COLUMN).collect()} == {files[1].uri}
    assert only.count() == 7
    assert backend.read_positioned(path, 0).count() == 5


def test_empty_table_from_zero_file_commit(backend, tmp_path):
    path = table_path(tmp_path)
    result = backend.commit_files(path, [], SCHEMA)
    assert result == WriteResult(version=0)
    assert backend.exists(path)
    df = backend.read(path)
    assert df.columns == SCHEMA.names
    assert df.count() == 0
    arrow = backend.read_arrow(path)
    assert arrow.num_rows == 0 and arrow.column_names == SCHEMA.names
    assert backend.schema(path) == SCHEMA
    assert backend.files(path, 0) == []
    assert backend.live_files(path) == []
    positioned = backend.read_positioned(path, 0)
    assert positioned.columns == [*SCHEMA.names, FILE_COLUMN, ROW_COLUMN]
    assert positioned.count() == 0
    # Rows can be appended to it afterwards.
    backend.write(batch([1, 2]), path)
    assert rows(backend.read(path)) == rows(batch([1, 2]))


def test_table_path_with_space_hash_and_plus(backend, spark, tmp_path):
    # Spark and delta-rs report such paths percent-encoded (my%20table%20%231+x); the storage
    # must hand back and read plain local paths.
    path = table_path(tmp_path, "my table #1+x")
    first, second = batch([0, 1, 2]), batch([3, 4])
    backend.write(first, path)
    backend.write(spark.createDataFrame(second), path)
    expected = rows(pa.concat_tables([first, second]))
    assert rows(backend.read(path)) == expected
    assert rows(backend.read_arrow(path)) == expected
    assert rows(backend.read_arrow(path, 0)) == rows(first)
    live = backend.live_files(path)
    assert all(f.path.startswith(path + "/") and os.path.exists(f.path) for f in live)
    files = backend.files(path, 1)
    assert [f.commit_version for f in files][:2] == [0, 1]  # Spark may write several files
    assert all(os.path.exists(f.uri) for f in files)
    assert {f.uri for f in files} == {f.path for f in live}
    positioned = backend.read_positioned(path, 1).select("n", FILE_COLUMN, ROW_COLUMN).collect()
    assert {r[FILE_COLUMN] for r in positioned} == {f.uri for f in files}
    assert sorted(r["n"] for r in positioned) == [0, 1, 2, 3, 4]
    only = backend.read_positioned(path, 1, files=[files[0].uri])
    assert sorted(r["n"] for r in only.select("n").collect()) == [0, 1, 2]


def test_open_storage_delta_spark_without_jars_names_the_variable(spark):
    if delta_jars_loadable(spark):
        pytest.skip("Delta jars are loaded: the missing-jars error cannot happen")
    with pytest.raises(SettingsError, match="REPRISE_DELTA_JARS"):
        open_storage(spark, "delta-spark")
    assert open_storage(spark, "auto").name == "delta-rs"


# --------------------------------------------------------------------------- delta-rs only


def log_actions(path: str) -> dict[int, list[dict]]:
    logs = sorted(Path(path, "_delta_log").glob("*.json"))
    return {int(f.stem): [json.loads(line) for line in f.read_text().splitlines() if line]
            for f in logs}


def test_delta_rs_writes_a_valid_delta_log(storage, spark, tmp_path):
    path = table_path(tmp_path)
    storage.commit_files(path, stage(storage, path, "b0", [batch([0, 1])]), SCHEMA,
                         txn=Txn("loader", 1))
    storage.write(batch([2, 3]), path, metadata={"reprise.batch": "2"})
    storage.write(spark.createDataFrame(batch([4, 5])), path)
    storage.write(batch([6], keys=["a"]), path, mode="overwrite", predicate="k = 'a'")
    storage.commit_files(path, [], SCHEMA, txn=Txn("loader", 2))
    latest = storage.version(path)
    assert latest == 4

    commits = log_actions(path)
    assert sorted(commits) == list(range(latest + 1))
    kinds = {kind for actions in commits.values() for action in actions for kind in action}
    assert {"protocol", "metaData", "add", "commitInfo", "txn"} <= kinds
    assert {"protocol", "metaData"} <= {k for a in commits[0] for k in a}
    for version, actions in commits.items():
        assert sum("commitInfo" in a for a in actions) == 1, version
        for action in actions:
            if "add" in action:
                add = action["add"]
                stats = json.loads(add["stats"])
                assert stats["numRecords"] == pq.ParquetFile(f"{path}/{add['path']}"
                                                             ).metadata.num_rows
                assert add["size"] == os.path.getsize(f"{path}/{add['path']}")
    for version in range(latest + 1):
        dt = DeltaTable(path, version=version)
        assert dt.version() == version
        assert dt.to_pyarrow_table().num_rows == storage.read_arrow(path, version).num_rows
    assert DeltaTable(path).transaction_version("loader") == 2


def test_delta_rs_refuses_column_mapping(storage, tmp_path):
    path = table_path(tmp_path)
    write_deltalake(path, batch([0, 1]), configuration={"delta.columnMapping.mode": "name"})
    readers = [lambda: storage.read(path), lambda: storage.read_arrow(path),
               lambda: storage.read_positioned(path, 0), lambda: storage.read(path, 0)]
    for read in readers:
        with pytest.raises(UnsupportedTableFeature) as info:
            read()
        assert path in str(info.value)
        assert "column mapping" in str(info.value)


def test_delta_rs_reads_deletion_vectors_enabled_but_unused(storage, tmp_path):
    path = table_path(tmp_path)
    data = batch(list(range(6)), keys=["a", "b", "a", "c", "a", "b"])
    write_deltalake(path, data, configuration={"delta.enableDeletionVectors": "true"})
    assert "deletionVectors" in (DeltaTable(path).protocol().reader_features or [])
    assert rows(storage.read_arrow(path)) == rows(data)
    assert rows(storage.read(path)) == rows(data)

    DeltaTable(path).delete("k = 'a'")
    # delta-rs rewrites the file instead of writing a deletion vector ...
    assert DeltaTable(path).deletion_vectors().read_all().num_rows == 0
    # ... so the guard lets the read through, and the deleted rows are gone.
    kept = [r for r in rows(data) if r["k"] != "a"]
    assert [r["n"] for r in kept] == [1, 3, 5]
    assert rows(storage.read_arrow(path)) == kept
    assert rows(storage.read(path)) == kept
    assert sorted(storage.read_positioned(path, 1).toArrow()["n"].to_pylist()) == [1, 3, 5]
    assert rows(storage.read_arrow(path, 0)) == rows(data)


def test_unsupported_features_decision():
    dvs = unsupported_features("/t", {"deletionVectors"}, {}, 2)
    assert dvs is not None and "deletion vectors" in dvs and "/t" in dvs
    nanos = unsupported_features("/t", {"timestampNanos"}, {}, 0)
    assert nanos is not None and "nanosecond" in nanos
    mapping = unsupported_features("/t", set(), {"delta.columnMapping.mode": "id"}, 0)
    assert mapping is not None and "column mapping" in mapping
    assert "column mapping" in unsupported_features("/t", {"columnMapping"}, {}, 0)
    assert unsupported_features("/t", set(), {}, 0) is None
    assert unsupported_features("/t", {"deletionVectors"}, {}, 0) is None
    assert unsupported_features("/t", set(), {"delta.columnMapping.mode": "none"}, 0) is None
    both = unsupported_features("/t", {"timestampNanos"}, {}, 1)
    assert "deletion vectors" in both and "nanosecond" in both


def claim_timestamp_nanos(path: str, features: list[str]) -> None:
    """Append commit 1, whose protocol claims ``features`` (readers and writers)."""
    log = Path(path, "_delta_log", "00000000000000000001.json")
    assert not log.exists()
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": features,
                "writerFeatures": features}
    commit = {"timestamp": 1_709_294_400_000, "operation": "SET TBLPROPERTIES",
              "operationParameters": {}}
    log.write_text(json.dumps({"protocol": protocol}) + "\n"
                   + json.dumps({"commitInfo": commit}) + "\n")


def test_delta_rs_refuses_table_claiming_timestamp_nanos(storage, tmp_path):
    # Exactly as a writer might claim it: delta-rs itself refuses to open this protocol
    # (timestampNanos without timestampNtz), so the read fails before our guard is reached.
    path = table_path(tmp_path)
    storage.write(batch([0, 1]), path)
    claim_timestamp_nanos(path, ["timestampNanos"])
    for read in (lambda: storage.read(path), lambda: storage.read_arrow(path),
                 lambda: storage.read_positioned(path, 1)):
        with pytest.raises(StorageError) as info:
            read()
        assert not isinstance(info.value, UnsupportedTableFeature)
        assert path in str(info.value)
        assert "timestampNanos" in str(info.value)
    assert rows(storage.read_arrow(path, 0)) == rows(batch([0, 1]))  # the old snapshot is fine


def test_delta_rs_guard_refuses_timestamp_nanos(storage, tmp_path):
    # With the feature's dependency declared too, delta-rs opens the table and our guard fires.
    path = table_path(tmp_path)
    storage.write(batch([0, 1]), path)
    claim_timestamp_nanos(path, ["timestampNtz", "timestampNanos"])
    for read in (lambda: storage.read(path), lambda: storage.read_arrow(path),
                 lambda: storage.read_positioned(path, 1)):
        with pytest.raises(UnsupportedTableFeature) as info:
            read()
        assert path in str(info.value)
        assert "nanosecond" in str(info.value)


def test_delta_rs_not_a_table_names_the_path(storage, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    pq.write_table(batch([0]), plain / "part.parquet")
    for path in (str(plain), str(tmp_path / "missing")):
        assert not storage.exists(path)
        for read in (lambda p=path: storage.read(p), lambda p=path: storage.read_arrow(p),
                     lambda p=path: storage.version(p), lambda p=path: storage.schema(p)):
            with pytest.raises(StorageError, match="no Delta table at") as info:
                read()
            assert path in str(info.value)


def test_delta_rs_appends_a_runs_commits_as_delta_rs_would(storage, tmp_path):
    """A run's commits in append mode (a remove too) are log entries written by the backend
    itself: a fresh delta-rs handle reads their files, app transactions and metadata; a commit
    that another writer's version takes is made by delta-rs after it; the checkpoint comes
    where delta-rs makes it."""
    path = table_path(tmp_path)
    parts = [batch([i]) for i in range(103)]
    for i, part in enumerate(parts[:3]):
        staged = stage(storage, path, f"b{i}", [part])
        assert storage.commit_files(path, staged, SCHEMA, txn=Txn("run", i),
                                    metadata={"reprise.batch": str(i)}).version == i
    entry = (Path(path) / "_delta_log" / f"{2:020d}.json").read_text().splitlines()
    assert json.loads(entry[0])["commitInfo"]["engineInfo"] == "reprise"  # the backend's own
    assert storage.commit_files(path, [], SCHEMA, txn=Txn("run", 2)).skipped
    write_deltalake(path, batch([1000]), mode="append")  # another writer: version 3
    staged = stage(storage, path, "b3", [parts[3]])
    assert storage.commit_files(path, staged, SCHEMA, txn=Txn("run", 3)).version == 4
    for i in range(4, 103):
        staged = stage(storage, path, f"b{i}", [parts[i]])
        assert storage.commit_files(path, staged, SCHEMA, txn=Txn("run", i),
                                    metadata={"reprise.batch": str(i)}).version == i + 1
    fresh = DeltaTable(path)
    assert fresh.version() == storage.version(path) == 103
    assert fresh.transaction_version("run") == 102
    assert sorted(fresh.to_pyarrow_dataset().to_table().column("n").to_pylist()) == [
        *range(103), 1000]
    assert sorted(f.name for f in (Path(path) / "_delta_log").iterdir()
                  if f.name.endswith(".checkpoint.parquet")) == [f"{99:020d}.checkpoint.parquet"]
    dropped = next(f.path for f in storage.live_files(path)
                   if f.path.endswith("b0/part-00000.parquet"))
    staged = stage(storage, path, "b103", [batch([2000])])
    assert storage.commit_files(path, staged, SCHEMA, txn=Txn("run", 103),
                                remove=[dropped]).version == 104
    assert sorted(DeltaTable(path).to_pyarrow_dataset().to_table().column("n").to_pylist()) == [
        *range(1, 103), 1000, 2000]
    history = storage.history(path, limit=3)[1:]
    assert [h["version"] for h in history] == [103, 102]
    assert storage.commit_metadata(history[0])["reprise.batch"] == "102"
    assert history[0]["operation"] == "WRITE"
    assert history[0]["operationParameters"]["mode"] == "Append"


def _without_ids(actions: list[dict]) -> list[dict]:
    """A version 0's actions without what differs between two makes of a table: ids, times,
    location, engine."""
    out = []
    for action in actions:
        action = json.loads(json.dumps(action))
        for kind, body in action.items():
            for field_name in ("id", "createdTime", "timestamp", "modificationTime",
                               "engineInfo", "clientVersion", "tags", "baseRowId",
                               "defaultRowCommitVersion", "clusteringProvider"):
                body.pop(field_name, None)
            if kind == "commitInfo":
                params = body["operationParameters"]
                params.pop("location")
                params["metadata"] = {k: v for k, v in json.loads(params["metadata"]).items()
                                      if k not in ("id", "createdTime")}
        out.append(action)
    return out


def test_delta_rs_makes_a_new_tables_version_0_as_delta_rs_would(storage, tmp_path):
    """A first commit in append mode to a new local table is the backend's own log entry, with
    the actions delta-rs writes for it (same protocol, metadata, adds and txn); a fresh delta-rs
    handle reads it; a directory with a log already is left to delta-rs."""
    ours, theirs = table_path(tmp_path, "ours"), table_path(tmp_path, "theirs")
    meta = {"reprise.run": "r", "reprise.batch": "0"}
    staged = stage(storage, ours, "a", [batch([0, 1, 2])])
    assert storage.commit_files(ours, staged, SCHEMA, txn=Txn("r/output", 0),
                                metadata=meta).version == 0
    made = log_actions(ours)[0]
    assert made[0]["commitInfo"]["engineInfo"] == "reprise"
    relative = [{**f.__dict__, "path": str(Path(f.path).relative_to(ours))} for f in staged]
    os.makedirs(f"{theirs}/{Path(relative[0]['path']).parent}")
    os.link(staged[0].path, f"{theirs}/{relative[0]['path']}")
    create_table_with_add_actions(
        theirs, Schema.from_arrow(SCHEMA),
        [AddAction(path=r["path"], size=r["size"], partition_values={}, modification_time=0,
                   data_change=True, stats=r["stats"]) for r in relative],
        mode="error", commit_properties=CommitProperties(
            custom_metadata=meta, app_transactions=[Transaction(app_id="r/output", version=0)]))
    assert _without_ids(made) == _without_ids(log_actions(theirs)[0])
    fresh = DeltaTable(ours)
    assert fresh.version() == 0 and fresh.transaction_version("r/output") == 0
    assert pa.schema(fresh.schema().to_arrow()) == SCHEMA
    assert fresh.to_pyarrow_table().column("n").to_pylist() == [0, 1, 2]
    # the next commit appends to it without delta-rs, as to a table delta-rs made
    staged = stage(storage, ours, "b", [batch([3])])
    assert storage.commit_files(ours, staged, SCHEMA, txn=Txn("r/output", 1)).version == 1
    assert DeltaTable(ours).transaction_version("r/output") == 1
    # a table whose version 0 entry was cleaned up after a checkpoint: not a new table
    kept = table_path(tmp_path, "kept")
    write_deltalake(kept, batch([0]))
    write_deltalake(kept, batch([1]), mode="append")
    DeltaTable(kept).create_checkpoint()
    (Path(kept) / "_delta_log" / f"{0:020d}.json").unlink()
    assert storage.commit_files(kept, stage(storage, kept, "c", [batch([2])]), SCHEMA
                                ).version == 2
    assert sorted(DeltaTable(kept).to_pyarrow_table().column("n").to_pylist()) == [0, 1, 2]

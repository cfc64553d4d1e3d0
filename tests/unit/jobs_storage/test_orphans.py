"""Which staged files of a run table may be deleted: only those no version of the log names."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
from deltalake.transaction import AddAction

from jobs.storage.orphans import clean_and_mark, mark, referenced_files, remove_unreferenced


def _table(tmp_path: Path, commits: int) -> Path:
    table = tmp_path / "output"
    for i in range(commits):
        write_deltalake(str(table), pa.table({"x": [i]}), mode="overwrite")
    return table


def _stray(table: Path, name: str = "b000009-dead/part-00000.parquet") -> Path:
    stray = table / "data" / name
    stray.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"x": [99]}), stray)
    return stray


def _moved_into_data(table: Path) -> None:
    """delta-rs writes its files at the table root; run tables stage theirs under data/."""
    for f in table.glob("*.parquet"):
        (table / "data").mkdir(exist_ok=True)
        shutil.copy(f, table / "data" / f.name)


def test_files_of_every_version_stay_and_unreferenced_ones_go(tmp_path):
    table = _table(tmp_path, 3)  # overwrite: versions 0 and 1 files are removed by later ones
    referenced = referenced_files(table)
    assert referenced is not None and len(referenced) == 3
    stray = _stray(table)
    _moved_into_data(table)  # copies: not named by the log either
    removed = remove_unreferenced(table)
    assert str(stray) in removed and not stray.parent.exists()
    assert all(Path(f).exists() for f in referenced)  # the originals, named by the log, are kept
    assert DeltaTable(str(table), version=0).to_pyarrow_table().num_rows == 1


def test_files_named_only_by_a_checkpoint_are_kept(tmp_path):
    table = _table(tmp_path, 2)
    DeltaTable(str(table)).create_checkpoint()
    live = {str(f.resolve()) for f in table.glob("*.parquet")}
    for log in (table / "_delta_log").glob("*.json"):
        log.unlink()  # as log retention would
    assert live <= referenced_files(table)


def test_a_log_this_reader_does_not_understand_deletes_nothing(tmp_path):
    table = _table(tmp_path, 1)
    stray = _stray(table)
    (table / "_delta_log" / "_sidecars").mkdir()
    assert referenced_files(table) is None
    assert remove_unreferenced(table) == [] and stray.exists()


def test_a_table_never_committed_loses_its_staged_files(tmp_path):
    table = tmp_path / "state"
    stray = _stray(table)
    assert remove_unreferenced(table) == [str(stray)]
    assert not any((table / "data").iterdir())


def test_since_a_mark_only_files_staged_after_it_are_looked_at(tmp_path):
    table = _table(tmp_path, 2)
    old_stray = _stray(table, "b000001-old/part-00000.parquet")
    (table / "_delta_log" / "_sidecars").mkdir()  # (read in full, this log stops the scan)
    since = mark(table)
    new_stray = _stray(table, "b000002-new/part-00000.parquet")
    committed = _stray(table, "b000003-new/part-00000.parquet")
    dt = DeltaTable(str(table))
    dt.create_write_transaction(
        [AddAction(path="data/b000003-new/part-00000.parquet", size=committed.stat().st_size,
                   partition_values={}, modification_time=0, data_change=True,
                   stats='{"numRecords": 1}')],
        mode="append", schema=dt.schema())
    assert remove_unreferenced(table, since) == [str(new_stray)]
    assert old_stray.exists() and committed.exists() and not new_stray.parent.exists()
    assert remove_unreferenced(table, mark(table)) == []  # nothing staged since


def test_a_mark_holds_the_newest_version_past_the_last_checkpoint(tmp_path):
    table = _table(tmp_path, 3)
    DeltaTable(str(table)).create_checkpoint()  # at version 2
    for i in range(2):
        write_deltalake(str(table), pa.table({"x": [i]}), mode="append")
    assert mark(table).version == 4
    assert mark(tmp_path / "never-made").version == -1
    assert len(referenced_files(table, after=2)) == 2  # the two appends' files only


def _commit(table: Path, name: str) -> Path:
    """A file staged under ``data/name`` and appended to the table's log."""
    staged = _stray(table, name)
    dt = DeltaTable(str(table))
    dt.create_write_transaction(
        [AddAction(path=f"data/{name}", size=staged.stat().st_size, partition_values={},
                   modification_time=0, data_change=True, stats='{"numRecords": 1}')],
        mode="append", schema=dt.schema())
    return staged


def test_clean_and_mark_keeps_a_killed_attempts_committed_files_through_the_run(tmp_path):
    table = _table(tmp_path, 1)
    committed = _commit(table, "a1/part-n000000.parquet")  # a killed attempt committed one file
    spare = _stray(table, "a1/part-n000001.parquet")  # and staged one it never committed
    started = clean_and_mark([str(table)])[str(table)]
    assert not spare.exists() and committed.exists()
    assert started.version == 1 and "a1" in started.data
    resumed = _commit(table, "a2/part-n000001.parquet")  # the resumed run's attempt
    resumed_spare = _stray(table, "a2/part-n000002.parquet")
    assert remove_unreferenced(table, started) == [str(resumed_spare)]
    assert committed.exists() and resumed.exists()
    assert DeltaTable(str(table)).to_pyarrow_table().num_rows == 3

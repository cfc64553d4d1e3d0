"""The part files a bucket task writes behind its steps: the same files and rows as written in
turn, in the order of the calls, and a failed write reported."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest

from jobs.execution.step_files import PartWriter, count_row, part_path, write_part


def _plan(root: Path) -> SimpleNamespace:
    return SimpleNamespace(dirs={kind: str(root / kind) for kind in ("output", "state")},
                           buckets=4)


def _tables() -> list[pa.Table]:
    return [pa.table({"k": [f"key{i}"] * (i + 1), "v": list(range(i + 1))}) for i in range(6)]


def test_files_written_behind_equal_those_written_in_turn_and_keep_the_calls_order(tmp_path):
    in_turn, behind = [], []
    with PartWriter() as writer:
        for batch, table in enumerate(_tables()):
            kind = "output" if batch % 2 else "state"
            in_turn.append(count_row(batch, "input", 1, batch))
            path = part_path(_plan(tmp_path / "a"), batch, kind, range(1, 3))
            in_turn.append(write_part(path, batch, kind, table, range(1, 3)))
            writer.add(count_row(batch, "input", 1, batch))
            writer.write(_plan(tmp_path / "b"), batch, kind, table, range(1, 3))
        writer.write(_plan(tmp_path / "b"), 9, "output", None, range(1, 3))  # nothing to write
        behind = writer.rows()
    assert len(behind) == len(in_turn) == 12
    for mine, theirs in zip(behind, in_turn, strict=True):
        assert mine == {**theirs, "path": theirs["path"].replace("/a/", "/b/")}
        if mine["path"]:
            assert Path(mine["path"]).read_bytes() == Path(theirs["path"]).read_bytes()


def test_a_failed_write_is_raised_by_rows(tmp_path):
    (tmp_path / "output").write_text("a file where the output directory would be")
    with PartWriter() as writer:
        writer.write(_plan(tmp_path), 0, "output", _tables()[0], range(1))
        with pytest.raises(OSError):
            writer.rows()

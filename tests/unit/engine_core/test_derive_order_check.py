"""The check, when a run is prepared, that each key's events arrive in the order a derived
column's window sorts them by (``jobs.execution.derived_columns._out_of_order``)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jobs.execution.derived_columns import _out_of_order


def _files(tmp_path, tables: list[dict]) -> list[dict]:
    """The tables as input files in arrival order (uri, first arrival position, rows)."""
    files, offset = [], 0
    for i, columns in enumerate(tables):
        path = tmp_path / f"part-{i}.parquet"
        table = pa.table(columns)
        pq.write_table(table, path)
        files.append({"uri": str(path), "offset": offset, "rows": table.num_rows})
        offset += table.num_rows
    return files


@pytest.mark.parametrize("keys", [["a", "b", None], [1, 2, None]], ids=["text", "int"])
def test_each_keys_order_across_files_with_other_dictionaries(tmp_path, keys):
    a, b, null = keys
    in_order = _files(tmp_path, [{"k": [a, b, null], "t": [5, 1, 7]},
                                 {"k": [b, null, a], "t": [2, 8, 5]}])
    assert _out_of_order(in_order, "k", "t") is None
    (tmp_path / "late").mkdir()
    late = _files(tmp_path / "late", [{"k": [a, b], "t": [5, 1]},
                                      {"k": [b, null, a], "t": [2, 8, 4]}])
    assert _out_of_order(late, "k", "t") == "some key's events do not arrive in t order"


def test_nulls_of_the_key_are_one_key(tmp_path):
    files = _files(tmp_path, [{"k": ["a", None], "t": [1, 9]}, {"k": [None, "a"], "t": [3, 4]}])
    assert _out_of_order(files, "k", "t") == "some key's events do not arrive in t order"


def test_a_file_with_only_null_keys_and_nulls_in_the_column(tmp_path):
    files = _files(tmp_path, [{"k": pa.array([None, None], pa.string()), "t": [2, 3]}])
    assert _out_of_order(files, "k", "t") is None
    (tmp_path / "n").mkdir()
    files = _files(tmp_path / "n", [{"k": ["a", "a"], "t": [2, None]}])
    assert _out_of_order(files, "k", "t") == "t has nulls"
    assert _out_of_order([], "k", "t") is None

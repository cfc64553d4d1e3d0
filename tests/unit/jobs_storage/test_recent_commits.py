"""The newest commits of a table read from their log entries alone equal delta-rs's history."""

from __future__ import annotations

import os

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from jobs.storage.delta_log import recent_commits


def test_the_newest_commits_equal_delta_rs_history(tmp_path):
    path = str(tmp_path / "t")
    for i, mode in enumerate(["append", "append", "overwrite", "append"]):
        write_deltalake(path, pa.table({"x": [i]}), mode=mode)
    dt = DeltaTable(path)
    for limit in range(1, dt.version() + 3):
        assert recent_commits(path, dt.version(), limit) == dt.history(limit)
    os.remove(f"{path}/_delta_log/{2:020d}.json")
    assert recent_commits(path, dt.version(), 3) is None
    assert recent_commits(path, dt.version(), 1) == dt.history(1)

"""Cheap look-ups of Delta table versions (no Spark): for sensors and recording assets."""

from __future__ import annotations

import pyarrow as pa
from deltalake import DeltaTable


def table_version(path: str) -> int | None:
    """Latest version of the Delta table at ``path``, or None when there is none."""
    return DeltaTable(path).version() if DeltaTable.is_deltatable(path) else None


def snapshot_summary(path: str) -> tuple[int, int, int] | None:
    """(version, rows, data files) of the latest snapshot, or None when there is no table."""
    if not DeltaTable.is_deltatable(path):
        return None
    table = DeltaTable(path)
    actions = pa.table(table.get_add_actions(flatten=True))
    rows = sum(n or 0 for n in actions.column("num_records").to_pylist())
    return table.version(), rows, actions.num_rows

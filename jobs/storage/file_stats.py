"""Delta statistics of a Parquet data file, from its footer (what a commit records per file)."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pyarrow.parquet as pq

from jobs.storage.base import LAYOUT_COLUMNS


def file_stats(path: str, meta: pq.FileMetaData | None = None,
               nulls_of: Mapping[str, int] | None = None) -> tuple[int, str]:
    """Row count and Delta stats JSON (numRecords, nullCount, min/max of numbers) of a file;
    ``meta``: its footer, when the writer kept it (else it is read from the file);
    ``nulls_of``: the null counts of columns written without statistics."""
    meta = meta or pq.ParquetFile(path).metadata
    nulls: dict[str, int] = dict(nulls_of or {})
    mins: dict[str, object] = {}
    maxs: dict[str, object] = {}
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for ci in range(group.num_columns):
            col = group.column(ci)
            name = col.path_in_schema
            st = col.statistics
            if st is None or name in LAYOUT_COLUMNS:  # (not columns of the table)
                continue
            nulls[name] = nulls.get(name, 0) + (st.null_count or 0)
            numeric = col.physical_type in ("INT32", "INT64", "FLOAT", "DOUBLE")
            logical = str(st.logical_type) if st.logical_type is not None else "None"
            if not (numeric and st.has_min_max and "Timestamp" not in logical):
                continue
            mins[name] = st.min if name not in mins else min(mins[name], st.min)
            maxs[name] = st.max if name not in maxs else max(maxs[name], st.max)
    stats = {"numRecords": meta.num_rows, "nullCount": nulls, "minValues": mins,
             "maxValues": maxs}
    return meta.num_rows, json.dumps(stats)

"""End to end, int values above 2^53 next to nulls stay exact: the direct exchange hands them to
the operator as nullable Int64, the output table holds the exact sums and first values, and
``validate`` (which compares int columns exactly) passes."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
from helpers import small_catalog, write_commits

from jobs.runs.replay import Replay
from jobs.runs.validate import validate_run
from jobs.warehouse import Warehouse

BIG = 2**53


def test_a_window_replay_of_ints_above_2_53_with_nulls_is_exact_and_validates(spark, storage):
    root = Path(tempfile.mkdtemp(prefix="reprise-ints-"))
    catalog = small_catalog(root / "schemas")
    warehouse = Warehouse(root / "warehouse")
    start = 1_700_000_000_000_000  # a multiple of the 5 s window
    table = pa.table({
        "k": pa.array(["a", "a", "a", "b", "b"]),
        "ts": pa.array([start + i for i in (0, 1, 2, 3, 4)], pa.int64()).cast(
            pa.timestamp("us", tz="UTC")),
        "v": pa.array([BIG + 1, BIG, None, None, None], pa.int64())})
    write_commits(storage, warehouse.recording("ev"), table, 2)
    replay = Replay(spark, storage, warehouse, catalog)
    replay.exchange = "direct"
    info = replay.prepare("ev_w", plan="rows:2", run_id="exact-ints")
    replay.run(info)
    report = validate_run(replay, replay.catalog, info.run_id)
    assert report.ok, report.diff
    output = replay.storage.read_arrow(replay.warehouse.run_table(info.run_id, "output"))
    sums = dict(zip(output.column("k").to_pylist(), output.column("s").to_pylist(),
                    strict=True))
    assert sums == {"a": 2 * BIG + 1, "b": None}  # (2^53 + 1) + 2^53; b has no values

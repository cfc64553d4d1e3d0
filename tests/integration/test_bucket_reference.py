"""validate of a per-key family computes the reference on the executors, per key bucket: the
same answer as on the driver, with int values above 2^53 next to nulls kept exact."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from helpers import events_table, small_catalog, write_commits

from jobs.execution.arrival import sequenced
from jobs.execution.bucket_reference import placeable, reference_by_bucket
from jobs.runs.replay import Replay
from jobs.runs.run_context import RunContext
from jobs.runs.validate import _exact_ints, validate_run
from jobs.warehouse import Warehouse

BIG = 2**60 + 1  # float64 would round it


@pytest.fixture
def replay(spark, storage, tmp_path):
    catalog = small_catalog(tmp_path / "schemas")
    warehouse = Warehouse(tmp_path / "warehouse")
    table = events_table(np.random.default_rng(18), 160)
    values = table.column("v").to_pylist()
    big = [None if v is None else BIG + 3 * v for v in values]  # nulls stay
    table = table.set_column(2, "v", pa.array(big, pa.int64()))
    write_commits(storage, warehouse.recording("ev"), table, 4)
    return Replay(spark, storage, warehouse, catalog)


@pytest.mark.parametrize("query", ["ev_w", "ev_q"])
def test_the_bucketed_reference_equals_the_driver_reference(replay, query):
    info = replay.prepare(query, plan="rows:40", run_id=f"bucketed-{query}")
    replay.run(info)
    ctx = RunContext.of(replay.catalog.query(query), replay.catalog.recordings)
    frame = sequenced(replay.storage, info.input_path, info.input_version, info.files, 0,
                      info.total, ctx.time_column)
    events, unplaceable = placeable(_exact_ints(frame, frame.toPandas(), ctx.recording), ctx.key)
    assert events["v"].dropna().map(lambda v: v >= BIG).all()
    driver_out, driver_late, driver_rejected = ctx.reference(info.cuts)(events)
    got = reference_by_bucket(frame, ctx.reference(info.cuts), ctx.key, ("v",), 3)
    assert sorted(got.late) == sorted(driver_late)
    assert sorted(got.rejected) == sorted(driver_rejected)
    assert sorted(got.unplaceable) == sorted(unplaceable) and unplaceable
    assert got.events == len(events)
    keys = replay.context(query).operator.output_keys
    ordered = [f.sort_values(keys).reset_index(drop=True).astype(object).to_dict("records")
               for f in (got.output, driver_out)]
    assert ordered[0] == ordered[1]
    report = validate_run(replay, replay.catalog, info.run_id)
    assert report.ok and report.reference_rows == len(driver_out) > 0

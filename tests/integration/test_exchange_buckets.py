"""Both exchanges put a key in the same bucket: the ``spark`` exchange's column computed by
Spark's Python workers (:func:`~jobs.execution.bucketing.bucketed`) equals the ``direct``
exchange's (:func:`~jobs.execution.bucketing.key_buckets` over the values read with pyarrow),
for text keys, int keys beyond 2^53 and null keys; and a run on either exchange writes the same
rows."""

from __future__ import annotations

import pyarrow as pa
import pytest
from test_replay import make_replay

from jobs.execution.bucketing import BUCKET, bucketed, key_buckets

TEXT = ["p1", "p2", None, "a longer key", "p1", "ü", "", "p17", None, "p2"]
INTS = [1, 2**62 + 1, None, -(2**61) - 3, 2**53 + 1, 0, 1, None, -1, 7]


@pytest.mark.parametrize(("values", "ddl"), [(TEXT, "k string"), (INTS, "k long")])
@pytest.mark.parametrize("buckets", [1, 3, 8])
def test_both_exchanges_give_each_key_the_same_bucket(spark, values, ddl, buckets):
    frame = spark.createDataFrame([(v, i) for i, v in enumerate(values)], f"{ddl}, i long")
    rows = sorted(bucketed(frame, "k", buckets).collect(), key=lambda r: r["i"])
    spark_side = [r[BUCKET] for r in rows]
    direct_side = key_buckets(pa.chunked_array([pa.array(values)]), buckets).tolist()
    assert spark_side == direct_side
    assert all(0 <= b < buckets for b in spark_side)
    by_key: dict = {}
    for v, b in zip(values, spark_side, strict=True):
        assert by_key.setdefault(v, b) == b  # a key has one bucket


def test_a_run_writes_the_same_rows_and_state_on_either_exchange(spark, storage):
    replay = make_replay(spark, storage, n=150, commits=3, seed=11)
    tables = {}
    for exchange in ("spark", "direct"):
        replay.exchange = exchange
        info = replay.prepare("ev_w", plan="rows:37", run_id=f"buckets-{exchange}")
        replay.run(info)
        tables[exchange] = {kind: sorted(replay.storage.read_arrow(
            replay.warehouse.run_table(info.run_id, kind)).to_pylist(), key=repr)
            for kind in ("output", "late", "quarantine", "state")}
    assert tables["spark"] == tables["direct"] and tables["direct"]["output"]

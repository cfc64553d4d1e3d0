"""Which derived expressions the workers compute (engine.derive) and which keep Spark SQL."""

from __future__ import annotations

import pytest

from engine.catalog import load_catalog
from engine.derive import Unsupported, compile_derived
from jobs.settings import PROJECT_ROOT

COLUMNS = {"k": "string", "v": "int", "p": "double", "ts": "timestamp", "g": "string"}


def test_the_sample_queries_derived_columns_run_in_the_workers():
    catalog = load_catalog(PROJECT_ROOT / "schemas")
    query = catalog.query("ticks_v_shapes")
    program = compile_derived(query.derived, catalog.recordings["ticks"].columns, "symbol")
    assert program.sorted_by == ("ts",)  # ORDER BY ts, __seq: the run checks ts's order
    assert [name for name, _, _ in program.columns] == ["change"]


@pytest.mark.parametrize(("sql", "declared", "reason"), [
    ("lead(v) over (partition by k order by __seq)", "int", "lead"),
    ("lag(v) over (partition by g order by __seq)", "int", "not the key"),
    ("lag(v) over (partition by k order by p)", "int", "not ordered by arrival"),
    ("lag(v) over (partition by k order by __seq desc)", "int", "not ordered by arrival"),
    ("sum(v) over (partition by k order by __seq rows between 1 preceding and current row)",
     "int", "frame"),
    ("upper(g)", "string", "string columns"),
    ("exp(p)", "double", "EXP"),
    ("v * 1.5", "double", "decimal literal"),
    ("cast(p as bigint)", "int", "double value as int"),
    ("length(g)", "int", "LENGTH"),
])
def test_other_expressions_keep_spark_sql(sql, declared, reason):
    with pytest.raises(Unsupported, match=reason):
        compile_derived({"x": (sql, declared)}, COLUMNS, "k")

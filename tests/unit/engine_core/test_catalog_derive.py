"""Derived input columns in query files: parsed, typed, and errors that name file and field."""

from __future__ import annotations

import pytest

from engine.catalog import parse_query, parse_recording
from engine.registry import input_recording
from engine.specs import CatalogError

EV = parse_recording({"name": "ev", "key": "k", "time": "ts",
                      "columns": {"k": "string", "ts": "timestamp", "v": "int"}})


def query(derive: object, key: str = "k") -> dict:
    return {"name": "q", "kind": "qre", "input": "ev", "key": key, "query": "eps(0)",
            "derive": derive}


def test_derived_columns_extend_the_input_and_may_be_the_key():
    spec = parse_query(query({"day": {"sql": "date_format(ts, 'yyyy-MM-dd')", "type": "string"},
                              "dv": {"sql": "v - lag(v) over (partition by k order by __seq)",
                                     "type": "int"}}, key="day"), {"ev": EV}, "q.yaml")
    assert spec.key == "day"
    assert input_recording(spec, {"ev": EV}).columns == {
        "k": "string", "ts": "timestamp", "v": "int", "day": "string", "dv": "int"}


@pytest.mark.parametrize(("derive", "field", "problem"), [
    ({"v": {"sql": "v + 1", "type": "int"}}, "derive.v", "not a column"),
    ({"w": {"sql": "v +* 1", "type": "int"}}, "derive.w.sql", "not a Spark SQL expression"),
    ({"w": {"sql": "v + 1", "type": "decimal"}}, "derive.w.type", "expected one of"),
    ({"w": "v + 1"}, "derive.w", "expected {sql: EXPR, type: T}"),
    ({"w": {"sql": "v + 1", "type": "int", "typo": 1}}, "derive.w.typo",
     "unknown field (expected sql, type)"),
    ({"w": {"sql": "v + 1"}}, "derive.w.type", "is required"),
    (["w"], "derive", "expected a mapping"),
])
def test_bad_derived_column_names_file_and_field(derive, field, problem):
    with pytest.raises(CatalogError) as err:
        parse_query(query(derive), {"ev": EV}, "q.yaml")
    assert err.value.source == "q.yaml" and err.value.field == field
    assert problem in err.value.problem


def test_key_must_be_a_recording_or_derived_column():
    with pytest.raises(CatalogError, match=r"q\.yaml: field 'key'"):
        parse_query(query({"dv": {"sql": "v * 2", "type": "int"}}, key="nope"), {"ev": EV},
                    "q.yaml")

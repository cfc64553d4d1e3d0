"""``derive:`` expressions: only the documented safe subset of Spark SQL, checked before Spark."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.catalog import load_catalog, parse_query, parse_recording
from engine.derive_sql import expression_problem
from engine.specs import CatalogError

ROOT = Path(__file__).resolve().parents[3]
EV = parse_recording({"name": "ev", "key": "k", "time": "ts",
                      "columns": {"k": "string", "ts": "timestamp", "v": "int", "x": "double"}})


def derive(sql: str, typ: str = "double") -> CatalogError | None:
    doc = {"name": "q", "kind": "qre", "input": "ev", "query": "eps(0)",
           "derive": {"d": {"sql": sql, "type": typ}}}
    try:
        parse_query(doc, {"ev": EV}, "q.yaml")
    except CatalogError as exc:
        return exc
    return None


def test_every_derived_column_of_the_sample_catalog_is_in_the_subset():
    catalog = load_catalog(ROOT / "schemas")
    assert any(q.derived for q in catalog.queries.values())


@pytest.mark.parametrize("sql", [
    "coalesce(round(x - lag(x) over (partition by k order by ts, __seq), 4), 0)",
    "concat(k, '/', date_format(ts, 'yyyy-MM-dd'))",
    "upper(k) || '/' || lpad(cast(v as string), 4, '0')",
    "case when v > 10 then abs(x) else greatest(x, 0) end",
    "row_number() over (partition by k order by __seq)",
    "count(*) over (partition by k)",
    "cast(v as double) / nullif(length(upper(k)), 0)",
    "pmod(v, 7) + hour(ts)",
    "sum(v) over (partition by k order by __seq rows between 2 preceding and current row)",
])
def test_the_subset_accepts_arithmetic_case_casts_math_string_time_and_window_functions(sql):
    assert derive(sql, "string") is None


@pytest.mark.parametrize(("sql", "problem"), [
    ("java_method('java.lang.System', 'getProperty', 'user.name')", "java_method() is not"),
    ("`java_method`('java.lang.System', 'getProperty', 'user.name')", "java_method() is not"),
    ("reflect('java.lang.System', 'exit', '0')", "reflect() is not allowed"),
    ("length(reflect('java.util.UUID', 'randomUUID'))", "reflect() is not allowed"),
    ("my_udf(v)", "my_udf() is not allowed"),
    ("(select max(v) from ev)", "subqueries are not allowed"),
    ("v in (select 1)", "subqueries are not allowed"),
    ("rand()", "not in the allowed subset"),
    ("uuid()", "not in the allowed subset"),
    ("transform(array(v), e -> e + 1)", "not in the allowed subset"),
    ("sum(v)", "only with OVER"),
    ("nope + 1", "unknown column 'nope'"),
    ("ev.v + 1", "must not be qualified"),
    ("concat('a\\', java_method('x', 'y'), '')", "not a Spark SQL expression"),
    ("v +* 1", "not a Spark SQL expression"),
])
def test_anything_outside_the_subset_is_rejected_naming_file_and_field(sql, problem):
    error = derive(sql)
    assert error is not None, sql
    assert str(error).startswith("q.yaml: field 'derive.d.sql': ") and problem in str(error)


@pytest.mark.parametrize("typ", ["int", "double", "bool"])
def test_a_number_or_bool_declared_over_a_string_expression_is_rejected(typ):
    error = derive("concat(k, '!')", typ)
    assert error is not None and f"declared {typ} but the expression is a string" in str(error)
    assert derive("concat(k, '!')", "string") is None
    assert derive("length(k)", typ) is None


def test_a_derived_column_may_use_the_ones_defined_before_it_not_after():
    doc = {"name": "q", "kind": "qre", "input": "ev", "query": "eps(0)",
           "derive": {"a": {"sql": "v * 2", "type": "int"}, "b": {"sql": "a + 1", "type": "int"}}}
    assert parse_query(doc, {"ev": EV}, "q.yaml").derived["b"] == ("a + 1", "int")
    doc["derive"] = {"b": {"sql": "a + 1", "type": "int"}, "a": {"sql": "v * 2", "type": "int"}}
    with pytest.raises(CatalogError, match="unknown column 'a'"):
        parse_query(doc, {"ev": EV}, "q.yaml")


TOKENS = ["v", "x", "k", "ts", "__seq", "nope", "1", "2.5", "'s'", "(", ")", ",", "+", "-", "*",
          "/", "%", "||", "=", "<", ">=", "and", "or", "not", "is", "null", "case", "when",
          "then", "else", "end", "cast", "as", "int", "string", "over", "partition", "by",
          "order", "rows", "between", "preceding", "current", "row", "lag", "sum", "abs",
          "concat", "java_method", "reflect", "select", "from", "in", "`", "'", "/*", ";", "->",
          "[", "]", ".", "*", "interval", "day", "like", "coalesce", "round", "rand"]


@settings(max_examples=3000, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=25), st.sampled_from(["int", "string"]))
def test_random_token_soup_gives_an_answer_never_an_exception(tokens, declared):
    problem = expression_problem(" ".join(tokens), declared,
                                 {"k": "string", "ts": "timestamp", "v": "int", "x": "double",
                                  "__seq": "int"})
    assert problem is None or (isinstance(problem, str) and problem)


@pytest.mark.parametrize("sql", ["(" * 3000 + "v" + ")" * 3000, "concat(" * 600 + "k" + ")" * 600])
def test_deep_nesting_is_an_answer_not_a_crash(sql):
    assert expression_problem(sql, "string", {"k": "string", "v": "int"}) == "nested too deeply"

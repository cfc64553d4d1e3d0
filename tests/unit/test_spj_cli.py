"""`reprise analyze`: verdicts as text and JSON, clear errors with a non-zero exit."""

import json

from typer.testing import CliRunner

from jobs.cli import app

SCHEMA = ["--schema", "S(A,B,C)", "--schema", "T(D,E)"]


def run(*args: str):
    return CliRunner().invoke(app, ["analyze", *args])


def test_unbounded_bag_query_names_condition_and_attributes():
    result = run("SELECT S.A FROM S, T WHERE S.B < T.D AND S.A = 10", *SCHEMA, "--json")
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.output)
    assert verdict["bounded"] is False and verdict["semantics"] == "bag"
    assert [v["condition"] for v in verdict["violations"]] == ["C3"]
    assert "S.B" in verdict["violations"][0]["explanation"]


def test_distinct_sibling_is_bounded_with_a_synopsis():
    result = run("SELECT DISTINCT S.A FROM S, T WHERE S.B < T.D AND S.A = 10", *SCHEMA, "--json")
    verdict = json.loads(result.output)
    assert verdict["bounded"] is True and verdict["semantics"] == "set"
    assert verdict["violations"] == [] and verdict["synopsis"]["units"] > 0


def test_errors_exit_non_zero_with_the_problem():
    unsupported = run("SELECT S.A FROM S WHERE S.A <> 3", *SCHEMA)
    assert unsupported.exit_code == 1 and "<>" in unsupported.output
    unknown = run("SELECT S.Z FROM S", *SCHEMA)
    assert unknown.exit_code == 1 and "Z" in unknown.output
    bad_schema = run("SELECT S.A FROM S", "--schema", "S A B")
    assert bad_schema.exit_code == 1 and "NAME(ATTR" in bad_schema.output


def test_unreadable_query_exits_non_zero_with_a_position():
    for sql in ('"', "/*", "SELECT S.A FROM S WHERE " + "(" * 60 + "S.A = 1" + ")" * 60):
        result = run(sql, *SCHEMA)
        assert result.exit_code == 1 and "line 1" in result.output, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)


def test_constant_select_list_gets_a_verdict():
    result = run("SELECT DISTINCT 1 FROM S, T WHERE S.B < T.D AND S.A = 10", *SCHEMA, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["bounded"] is True

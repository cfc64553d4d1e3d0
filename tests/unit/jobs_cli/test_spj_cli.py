"""`reprise analyze`: verdicts as text and JSON, clear errors with a non-zero exit."""

import json

from typer.testing import CliRunner

from jobs.cli.app import app

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


def test_schema_and_argument_mistakes_are_named(tmp_path):
    # (before: a repeated stream silently replaced the first, `S(A,A)` and `S(A,,B)` passed,
    # SQL beside --query was ignored, and no argument at all was exit 1)
    for schema in (["--schema", "S(A,B)", "--schema", "S(C)"], ["--schema", "S(A,A)"]):
        result = run("SELECT S.A FROM S", *schema)
        assert result.exit_code == 1 and "given twice" in result.output, result.output
    assert "expected NAME(ATTR" in run("SELECT S.A FROM S", "--schema", "S(A,,B)").output
    for args in ([], ["SELECT S.A FROM S", "--query", "vitals_spo2_histogram"]):
        result = run(*args)
        assert result.exit_code == 2 and result.output.startswith("error: ")
        assert len(result.output.strip().splitlines()) == 1, result.output


def test_a_catalog_query_that_does_not_parse_is_named_by_its_file(tmp_path):
    import shutil
    from pathlib import Path

    catalog = tmp_path / "cat"
    shutil.copytree(Path(__file__).resolve().parents[3] / "schemas", catalog)
    source = catalog / "queries" / "ads_campaign_counts.yaml"
    text = source.read_text()
    sql = text.split("query:", 1)[1]
    source.write_text(text.replace(sql, ' "SELECT FROM WHERE"\n'))
    result = run("--query", "ads_campaign_counts", "--catalog", str(catalog))
    assert result.exit_code == 1, result.output
    line = result.output.strip()
    assert line.startswith("error: ") and "ads_campaign_counts.yaml: field 'query': " in line
    assert "allow_unbounded" not in line  # (a syntax error is no reason to allow unboundedness)


def test_only_an_unbounded_query_is_told_to_allow_unboundedness(tmp_path):
    import shutil
    from pathlib import Path

    import pytest

    from engine.catalog import load_catalog
    from engine.specs import CatalogError
    from engine.spj.stream import SpjOperator

    catalog = tmp_path / "cat"
    shutil.copytree(Path(__file__).resolve().parents[3] / "schemas", catalog)
    source = catalog / "queries" / "ads_user_campaigns.yaml"  # unbounded (README), allowed
    source.write_text(source.read_text().replace("allow_unbounded: true\n", ""))
    unbounded = load_catalog(catalog).query("ads_user_campaigns")
    with pytest.raises(CatalogError) as refused:
        SpjOperator(unbounded, load_catalog(catalog).recordings)
    message = str(refused.value)
    assert "not bounded-memory computable" in message
    # the catalog's words only (before, also the Python API's "allow_unbounded=True ...")
    assert message.count("allow_unbounded") == 1 and "`allow_unbounded: true`" in message
    source = catalog / "queries" / "ads_campaign_counts.yaml"
    text = source.read_text()
    source.write_text(text.replace(text.split("query:", 1)[1], ' "SELECT FROM WHERE"\n'))
    broken = load_catalog(catalog)
    with pytest.raises(CatalogError) as syntax:
        SpjOperator(broken.query("ads_campaign_counts"), broken.recordings)
    assert "allow_unbounded" not in str(syntax.value)

"""``kind: select`` and ``where:``: the spec and its errors, the operator against the reference
under any batch plan, SQL null semantics, and where's errors naming file and field."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from engine.catalog import parse_query, parse_recording
from engine.filtered import FilteredOperator
from engine.operator import SEQ, TIME, run_batches
from engine.registry import family_of, operator_for, reference_for
from engine.select import SelectOperator
from engine.specs import CatalogError
from jobs.cli.app import app

VITALS = parse_recording({"name": "vitals", "key": "patient_id", "time": "ts",
                          "columns": {"patient_id": "string", "ts": "timestamp",
                                      "heart_rate": "int", "spo2": "int", "note": "string"}})
RECORDINGS = {"vitals": VITALS}


def select(where: str | None = "spo2 < 90", columns: object = ("patient_id", "ts", "spo2"),
           **fields: object):
    doc = {"name": "low", "kind": "select", "input": "vitals",
           "query": {"columns": list(columns) if isinstance(columns, tuple) else columns},
           **({"where": where} if where is not None else {}), **fields}
    return parse_query(doc, RECORDINGS, "low.yaml")


def events(n: int = 40, seed: int = 1) -> pd.DataFrame:
    """Readings of three patients, out of order, with null SpO2 and heart rates."""
    rng = np.random.default_rng(seed)
    t = (np.arange(n) * 1_000_000 + rng.integers(-5_000_000, 5_000_000, n)).astype("int64")
    spo2 = pd.array(rng.integers(80, 100, n), dtype="Int64")
    spo2[rng.random(n) < 0.2] = pd.NA
    hr = pd.array(rng.integers(50, 150, n), dtype="Int64")
    hr[rng.random(n) < 0.2] = pd.NA
    return pd.DataFrame({
        "patient_id": pd.Series(rng.choice(["p1", "p2", "p3"], n), dtype=object),
        "ts": pd.to_datetime(t, unit="us", utc=True), "heart_rate": hr, "spo2": spo2,
        "note": pd.Series(rng.choice(["ok", "check", None], n), dtype=object),
        TIME: t, SEQ: np.arange(n, dtype="int64")})


def batches(frame: pd.DataFrame, cuts: list[int]) -> list[pd.DataFrame]:
    bounds = [0, *cuts, len(frame)]
    return [frame.iloc[a:b] for a, b in itertools.pairwise(bounds)]


def replayed(query, frame: pd.DataFrame, cuts: list[int]) -> pd.DataFrame:
    """The output of ``query``'s run operator over ``frame`` cut at ``cuts``, timestamps in
    microseconds (as a run's output table reads back)."""
    out, late, _, _ = run_batches(operator_for(query, RECORDINGS), batches(frame, cuts))
    assert late.empty
    if "ts" in out:
        out = out.assign(ts=pd.to_datetime(out["ts"], utc=True).dt.as_unit("us")
                         .astype("int64"))
    return out.astype(object).where(out.notna(), None)


def expected(query, frame: pd.DataFrame) -> pd.DataFrame:
    op = operator_for(query, RECORDINGS)
    rows, late, rejected = reference_for(query, RECORDINGS, op)(frame)
    assert late == [] and rejected == []
    return rows


def test_select_emits_the_passing_rows_chosen_columns_in_arrival_order():
    query = select()
    op = operator_for(query, RECORDINGS)
    assert isinstance(op, FilteredOperator) and isinstance(op.inner, SelectOperator)
    assert op.output_schema.names == ["patient_id", "ts", "spo2", "arrival_seq"]
    assert op.output_keys == ["arrival_seq"]
    frame = events()
    out = replayed(query, frame, [7, 7, 20])
    spo2 = frame["spo2"]
    want = frame[(spo2 < 90).fillna(False).astype(bool)]  # NULL < 90 is unknown: not emitted
    assert out["arrival_seq"].tolist() == want[SEQ].tolist()
    assert out["spo2"].tolist() == want["spo2"].tolist()
    assert all(v < 90 for v in out["spo2"])


@pytest.mark.parametrize("where", [
    "spo2 < 90", "NOT spo2 >= 90", "spo2 BETWEEN 85 AND 95 OR heart_rate > 120",
    "spo2 IS NULL", "note IN ('ok', 'check') AND NOT heart_rate IN (60, 61, 62)",
    "patient_id = 'p2' AND ts >= '1970-01-01 00:00:10'", None])
@pytest.mark.parametrize("cuts", [[], [1, 1, 5, 30], list(range(40))])
def test_select_equals_its_reference_under_any_batch_plan(where, cuts):
    query = select(where, columns=("spo2", "note", "heart_rate", "ts"))
    frame = events()
    out, ref = replayed(query, frame, cuts), expected(query, frame)
    assert out.to_dict("records") == ref.to_dict("records")


def test_where_on_select_uses_sql_null_semantics():
    """A row passes only when the predicate is TRUE: NULL compared with anything is unknown,
    and so is its negation."""
    frame = events()
    low, not_high = (replayed(select(w), frame, []) for w in ("spo2 < 90", "NOT spo2 >= 90"))
    nulls = set(frame.loc[frame["spo2"].isna(), SEQ])
    assert nulls and not nulls & set(low["arrival_seq"])
    assert low.to_dict("records") == not_high.to_dict("records")
    both = replayed(select("spo2 < 90 OR spo2 >= 90"), frame, [])
    assert set(both["arrival_seq"]) == set(frame[SEQ]) - nulls


def test_select_columns_read_include_the_where_columns():
    query = select("heart_rate > 100", columns=("spo2",))
    family = family_of("select")
    assert set(family.columns_read(query, RECORDINGS)) == {"patient_id", "ts", "spo2"}
    assert set(family.run_columns(query, RECORDINGS)) == {"patient_id", "ts", "spo2",
                                                          "heart_rate"}


@pytest.mark.parametrize(("columns", "fields", "field", "problem"), [
    ("spo2", {}, "query.columns", "non-empty list"),
    ([], {}, "query.columns", "non-empty list"),
    (["spo2", "nope"], {}, "query.columns[1]", "'nope' is not a column of 'vitals'"),
    (["spo2", "spo2"], {}, "query.columns[1]", "listed twice"),
    (["spo2"], {"lateness": "5s"}, "lateness", "no lateness"),
])
def test_bad_select_spec_names_file_and_field(columns, fields, field, problem):
    query = select(columns=columns, **fields)
    with pytest.raises(CatalogError) as err:
        operator_for(query, RECORDINGS)
    assert (err.value.source, err.value.field) == ("low.yaml", field)
    assert problem in err.value.problem


def test_a_select_query_field_other_than_columns_is_refused():
    doc = {"name": "low", "kind": "select", "input": "vitals",
           "query": {"columns": ["spo2"], "where": "spo2 < 90"}}
    with pytest.raises(CatalogError, match=r"low\.yaml: field 'query\.where': unknown field"):
        operator_for(parse_query(doc, RECORDINGS, "low.yaml"), RECORDINGS)


@pytest.mark.parametrize(("where", "problem"), [
    ("spo2 <", "cannot parse"),
    ("oxygen < 90", "oxygen"),
    ("spo2 < 'low'", "spo2"),
    ("", "expected a SQL condition"),
    (42, "expected a SQL condition"),
])
def test_bad_where_fails_with_file_field_and_problem(where, problem):
    with pytest.raises(CatalogError) as err:
        select(where)
    assert str(err.value).startswith("low.yaml: field 'where': ")
    assert problem in err.value.problem


def test_where_may_read_derived_columns_and_is_refused_on_multi_input_queries():
    doc = {"name": "q", "kind": "select", "input": "vitals", "query": {"columns": ["spo2"]},
           "derive": {"deficit": {"sql": "100 - spo2", "type": "int"}}, "where": "deficit > 10"}
    assert parse_query(doc, RECORDINGS, "q.yaml").where.columns == {"deficit"}
    spj = {"name": "j", "kind": "spj", "inputs": {"v": "vitals"}, "where": "spo2 < 90",
           "query": "SELECT v.spo2 FROM v"}
    with pytest.raises(CatalogError, match=r"j\.yaml: field 'where': a spj query has its own "
                                           "SQL: put the row condition in its WHERE"):
        parse_query(spj, RECORDINGS, "j.yaml")


def test_the_cli_reports_a_bad_where_as_one_line_naming_file_and_field(tmp_path):
    catalog = tmp_path / "schemas"
    shutil.copytree(Path(__file__).resolve().parents[3] / "schemas", catalog)
    path = catalog / "queries" / "vitals_low_spo2.yaml"
    path.write_text(path.read_text().replace("where: spo2 < 90", "where: oxygen < 90"))
    result = CliRunner().invoke(app, ["analyze", "--query", "vitals_low_spo2", "--catalog",
                                      str(catalog)])
    assert result.exit_code == 1
    line = result.output.strip()
    assert "\n" not in line and line.startswith("error: ")
    assert f"{path}: field 'where': unknown column 'oxygen'" in line


@pytest.mark.parametrize(("extra", "kind"), [
    ({"lateness": "5s"}, "spj"), ({"key": "patient_id"}, "spj"), ({"time": "ts"}, "spj"),
    ({"inputs": {"v": "vitals"}}, "select"), ({"allow_unbounded": True}, "select")])
def test_a_field_of_the_other_kind_of_query_is_refused(extra, kind):
    # (before, it was read and ignored: `lateness:` on an spj query, `inputs:` on a qre query)
    if kind == "spj":
        doc = {"name": "j", "kind": "spj", "inputs": {"v": "vitals"},
               "query": "SELECT v.spo2 FROM v"}
    else:
        doc = {"name": "j", "kind": "select", "input": "vitals",
               "query": {"columns": ["spo2"]}}
    (field,) = extra
    reads = "several recordings" if kind == "spj" else "one recording"
    with pytest.raises(CatalogError, match=rf"j\.yaml: field '{field}': not a field of a {kind} "
                                           rf"query \(it reads {reads}\)"):
        parse_query({**doc, **extra}, RECORDINGS, "j.yaml")
    parse_query(doc, RECORDINGS, "j.yaml")  # without it, the query is fine

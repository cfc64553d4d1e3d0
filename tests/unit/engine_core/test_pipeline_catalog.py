"""``input: {query: NAME}``: a query over another query's output. Its key and time default to the
upstream family's (a window's key and ``window_end``, a QRE's key and ``event_time``, a select's
chosen key and time columns); an unknown upstream, a cycle, columns the output lacks, an
upstream whose rows can be superseded and a stateful upstream read by another key are errors
``<file>: field '<f>': <problem>`` naming the reading file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.catalog import load_catalog
from engine.specs import CatalogError
from jobs.cli.app import app

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"

MINUTES = """name: minutes
kind: window
input: vitals
lateness: 10s
query:
  window: {type: tumbling, size: 1m}
  aggregates:
    hr_avg: avg(heart_rate)
    readings: count()
"""
HOURLY = """name: hourly
kind: window
input: {query: minutes}
query:
  window: {type: tumbling, size: 1h}
  aggregates:
    hr_peak: max(hr_avg)
"""
ALERT = """name: alert
kind: qre
input: {query: minutes}
output: every
query: |
  iter(eps(0), atom(hr_avg > 110, 1) | atom(hr_avg <= 110, 0), +)
"""
LOW = """name: low
kind: select
input: vitals
where: spo2 < 90
query: {columns: [patient_id, ts, spo2]}
"""


@pytest.fixture
def schemas(tmp_path: Path) -> Path:
    root = tmp_path / "schemas"
    shutil.copytree(SCHEMAS, root)
    for text in (MINUTES, HOURLY, ALERT, LOW):
        write(root, text)
    return root


def write(root: Path, text: str) -> None:
    name = text.split("\n", 1)[0].removeprefix("name: ")
    (root / "queries" / f"{name}.yaml").write_text(text)


def error(root: Path, name: str) -> CatalogError:
    catalog = load_catalog(root)
    assert catalog.query("vitals_hr_1m").kind == "window"  # the others still load
    with pytest.raises(CatalogError) as err:
        catalog.query(name)
    assert str(err.value).startswith(f"{root / 'queries' / name}.yaml: field '")
    assert "\n" not in str(err.value)
    return err.value


def test_defaults_per_upstream_family(schemas):
    catalog = load_catalog(schemas)
    hourly, alert = catalog.query("hourly"), catalog.query("alert")
    assert (hourly.key, hourly.time) == ("patient_id", "window_end")
    assert hourly.upstream is not None and hourly.upstream.query.name == "minutes"
    assert hourly.upstream.stream.columns == {
        "patient_id": "string", "window_start": "timestamp", "window_end": "timestamp",
        "hr_avg": "double", "readings": "int"}
    assert (alert.key, alert.time) == ("patient_id", "window_end")
    write(schemas, "name: over_alert\nkind: select\ninput: {query: alert}\n"
                   "query: {columns: [patient_id, event_time, value]}\n")
    write(schemas, "name: over_low\nkind: window\ninput: {query: low}\n"
                   "query: {window: {type: tumbling, size: 1h}, aggregates: {n: count()}}\n")
    catalog = load_catalog(schemas)
    over_alert, over_low = catalog.query("over_alert"), catalog.query("over_low")
    assert (over_alert.key, over_alert.time) == ("patient_id", "event_time")
    assert (over_low.key, over_low.time) == ("patient_id", "ts")
    assert over_low.upstream.order == ("arrival_seq",)
    assert over_alert.upstream.order == ("patient_id", "event_time", "arrival_seq")


def test_a_chain_of_three_loads_whatever_the_file_order(schemas):
    write(schemas, HOURLY.replace("name: hourly", "name: a_daily").replace(
        "query: minutes", "query: hourly").replace("1h", "1d").replace("hr_avg", "hr_peak"))
    catalog = load_catalog(schemas)
    daily = catalog.query("a_daily")
    assert daily.upstream.query.upstream.query.name == "minutes"
    assert daily.key == "patient_id"


@pytest.mark.parametrize(("text", "field", "problem"), [
    (HOURLY.replace("query: minutes", "query: nowhere"), "input", "unknown query 'nowhere'"),
    (HOURLY.replace("query: minutes", "query: hourly"), "input", "its own output"),
    (HOURLY.replace("{query: minutes}", "{query: minutes, x: 1}"), "input.x", "unknown field"),
    (HOURLY.replace("{query: minutes}", "{query: [minutes]}"), "input", "expected {query"),
    (HOURLY.replace("hr_peak: max(hr_avg)", "hr_peak: max(heart_rate)"), "query.aggregates",
     "heart_rate"),
    (HOURLY + "key: readings\n", "key", "must be 'patient_id'"),
    (HOURLY + "key: none\n", "key", "must be 'patient_id'"),
    (HOURLY + "time: ts\n", "time", "'ts' is not a timestamp column of the output of query "
     "'minutes'"),
    (HOURLY + "where: spo2 < 90\n", "where", "spo2"),
    (HOURLY + "batch: {by: commit}\n", "batch", "first query of the chain"),
    (HOURLY + "derive: {x: {sql: 'spo2 + 1', type: int}}\n", "derive.x.sql", "spo2"),
])
def test_bad_pipeline_fields_name_the_file_and_field(schemas, text, field, problem):
    write(schemas, text)
    err = error(schemas, "hourly")
    assert err.field.startswith(field) and problem in err.problem, err


def test_a_cycle_is_an_error_of_every_query_on_it(schemas):
    write(schemas, MINUTES.replace("input: vitals", "input: {query: hourly}")
          .replace("lateness: 10s\n", ""))
    for name in ("minutes", "hourly", "alert"):
        err = error(schemas, name)
        assert err.field == "input"
    assert "cycle" in error(schemas, "hourly").problem
    assert "cycle" in error(schemas, "minutes").problem


def test_an_upstream_that_failed_names_its_error(schemas):
    write(schemas, MINUTES.replace("avg(heart_rate)", "avg(nothing)"))
    err = error(schemas, "hourly")
    assert err.field == "input" and "query 'minutes' failed to load" in err.problem


def test_updates_rows_are_refused(schemas):
    write(schemas, MINUTES.replace("  window:", "  emit: updates\n  window:"))
    assert load_catalog(schemas).query("minutes").kind == "window"
    err = error(schemas, "hourly")
    assert err.field == "input" and "superseded" in err.problem


def test_a_select_without_key_or_time_columns_needs_them_named(schemas):
    write(schemas, LOW.replace("[patient_id, ts, spo2]", "[ts, spo2]"))
    write(schemas, "name: over_low\nkind: window\ninput: {query: low}\n"
                   "query: {window: {type: tumbling, size: 1h}, aggregates: {n: count()}}\n")
    err = error(schemas, "over_low")
    assert err.field == "key" and "is required" in err.problem
    write(schemas, "name: over_low\nkind: window\ninput: {query: low}\nkey: none\n"
                   "query: {window: {type: tumbling, size: 1h}, aggregates: {n: count()}}\n")
    assert load_catalog(schemas).query("over_low").time == "ts"


def test_spj_reads_recordings_only(schemas):
    write(schemas, "name: j\nkind: spj\nquery: SELECT a.patient_id FROM a\n"
                   "inputs: {a: {query: minutes}}\n")
    err = error(schemas, "j")
    assert err.field == "inputs.a" and "recordings only" in err.problem
    write(schemas, "name: over_spj\nkind: select\ninput: {query: ads_campaign_counts}\n"
                   "key: campaign_id\ntime: campaign_id\nquery: {columns: [campaign_id]}\n")
    err = error(schemas, "over_spj")
    assert err.field == "input" and "cannot be read" in err.problem


@pytest.mark.parametrize("command", [["replay", "hourly"], ["plan", "hourly"],
                                     ["replay", "alert", "--continue"]])
def test_the_cli_reports_a_pipeline_error_on_one_line_and_writes_nothing(schemas, tmp_path,
                                                                         command):
    write(schemas, MINUTES.replace("input: vitals", "input: {query: alert}"))
    warehouse = tmp_path / "warehouse"
    done = CliRunner().invoke(app, [*command, "--catalog", str(schemas), "--warehouse",
                                    str(warehouse)])
    assert done.exit_code == 1, done.output
    (line,) = done.output.strip().splitlines()
    assert "field 'input'" in line and "cycle" in line and "queries/" in line
    assert not warehouse.exists() or not any(warehouse.rglob("*"))

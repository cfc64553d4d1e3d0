"""``reprise plan``: the shared plan of catalog queries on one recording, with statistics read
from the recording's Delta snapshot (no Spark: the table is written with delta-rs)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import write_deltalake
from helpers import events_table, small_catalog
from typer.testing import CliRunner

from engine.operator import exact_pandas
from jobs.cli.app import app
from jobs.shared import shared_plan
from jobs.shared.shared_plan import table_statistics
from jobs.warehouse import Warehouse

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"
QUERIES = {
    "s1": "name: s1\nkind: select\ninput: ev\nwhere: v < 30\nquery:\n  columns: [ts, v]\n",
    "w1": ("name: w1\nkind: window\ninput: ev\nlateness: 3s\nwhere: v < 60\nquery:\n"
           "  window: {type: tumbling, size: 10s}\n  aggregates: {n: count(), a: avg(v)}\n"),
    "w2": ("name: w2\nkind: window\ninput: ev\nlateness: 3s\nwhere: v < 60\nquery:\n"
           "  window: {type: sliding, size: 20s, slide: 5s}\n"
           "  aggregates: {n: count(), hi: max(v)}\n  having: n > 2\n"),
    "g": ("name: g\nkind: window\ninput: ev\nkey: none\nlateness: 3s\nquery:\n"
          "  window: {type: tumbling, size: 10s}\n  aggregates: {n: count()}\n"),
    # ev_d's dv, written otherwise (the same parsed expression and type)
    "w3": ("name: w3\nkind: window\ninput: ev\nlateness: 3s\nderive:\n"
           "  dv: {sql: 'v  -  LAG(v) OVER (PARTITION BY k ORDER BY __seq)', type: int}\n"
           "query:\n  window: {type: tumbling, size: 10s}\n  aggregates: {s: sum(dv)}\n"),
    # another dv
    "s2": ("name: s2\nkind: select\ninput: ev\nderive:\n"
           "  dv: {sql: 'coalesce(v, 0) * 2', type: int}\nwhere: dv < 50\n"
           "query:\n  columns: [k, dv]\n"),
    # a derived column only Spark SQL computes
    "sq": ("name: sq\nkind: select\ninput: ev\nderive:\n"
           "  day: {sql: \"date_format(ts, 'yyyy-MM-dd')\", type: string}\n"
           "query:\n  columns: [k, day]\n"),
}


def setup(tmp_path: Path) -> tuple[Path, Path]:
    schemas, warehouse = tmp_path / "schemas", tmp_path / "warehouse"
    small_catalog(schemas)
    for name, text in QUERIES.items():
        (schemas / "queries" / f"{name}.yaml").write_text(text)
    table = events_table(np.random.default_rng(3), 400)
    for i in range(4):
        write_deltalake(str(Warehouse(warehouse).recording("ev")), table.slice(i * 100, 100),
                        mode="append")
    return schemas, warehouse


def run(schemas: Path, warehouse: Path, *args: str):
    return CliRunner().invoke(app, ["plan", *args, "--catalog", str(schemas),
                                    "--warehouse", str(warehouse)])


def test_plan_json_has_the_fields_of_the_issue_and_is_order_independent(tmp_path):
    schemas, warehouse = setup(tmp_path)
    result = run(schemas, warehouse, "s1", "w1", "w2", "ev_q", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert isinstance(doc["plan_hash"], str) and len(doc["plan_hash"]) == 64
    assert sorted(q for c in doc["clusters"] for q in c["queries"]) == \
        ["ev_q", "s1", "w1", "w2"]
    for cluster in doc["clusters"]:
        assert {"queries", "where", "columns", "pane_groups"} <= set(cluster)
        for group in cluster["pane_groups"]:
            assert {"queries", "pane"} <= set(group)
    assert set(doc["residuals"]) == {"ev_q", "s1", "w1", "w2"}
    assert doc["residuals"]["w2"]["having"] == "n >= 3"  # having stays residual
    assert doc["estimates"]["rows"] == 400
    again = json.loads(run(schemas, warehouse, "ev_q", "w2", "w1", "s1", "--json").output)
    assert again["plan_hash"] == doc["plan_hash"]


def test_plan_text_names_clusters_residuals_and_hash(tmp_path):
    schemas, warehouse = setup(tmp_path)
    result = run(schemas, warehouse, "s1", "w1")
    assert result.exit_code == 0, result.output
    doc = json.loads(run(schemas, warehouse, "s1", "w1", "--json").output)
    assert doc["plan_hash"] in result.output
    assert "cluster 0" in result.output and "s1: cluster" in result.output
    assert "rows read" in result.output
    entering = doc["estimates"]["rows_entering_queries"]  # the README lists it in the text too
    assert (f"rows entering the queries {entering['shared']:,} vs "
            f"{entering['standalone']:,}") in result.output
    counters = doc["counters"]  # MATCH, MERGE, NEW: the README's (and the JSON's) words
    assert (f"served: {counters['match']} match, {counters['merge']} merge (widened W), "
            f"{counters['new']} new (starts a stream)") in result.output


def test_queries_on_different_recordings_say_which_each_reads():
    result = CliRunner().invoke(app, ["plan", "vitals_hr_1m", "ads_10s", "--catalog",
                                      str(SCHEMAS)])
    assert result.exit_code == 1
    assert "vitals_hr_1m reads vitals" in result.output and "ads_10s reads ads" in result.output


def test_spark_sql_derived_columns_and_spj_queries_stand_alone_and_say_why(tmp_path):
    schemas, warehouse = setup(tmp_path)
    result = run(schemas, warehouse, "s1", "w1", "g", "ev_d", "sq", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert set(doc["on_its_own"]) == {"sq"}  # key: none and worker-computed derive: share
    assert sorted(doc["residuals"]) == ["ev_d", "g", "s1", "w1"]
    text = run(schemas, warehouse, "s1", "w1", "sq").output
    assert "sq: on its own: its derived columns need Spark SQL (day: " in text
    # none of them can share: an empty plan, each listed on its own, as `replay` runs them
    result = run(schemas, warehouse, "sq", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["clusters"] == [] and doc["residuals"] == {}
    assert set(doc["on_its_own"]) == {"sq"}
    alone = CliRunner().invoke(app, ["plan", "vitals_spo2_histogram", "--catalog",
                                     str(SCHEMAS)])
    assert alone.exit_code == 0, alone.output
    assert "vitals_spo2_histogram: on its own: an spj query" in alone.output


def test_plan_lists_each_derived_definition_once_per_cluster_with_its_members(tmp_path):
    schemas, warehouse = setup(tmp_path)
    doc = json.loads(run(schemas, warehouse, "ev_d", "w3", "s2", "g", "w1", "--json").output)
    cluster = next(c for c in doc["clusters"] if "ev_d" in c["queries"])
    assert "w3" in cluster["queries"]
    derived = {tuple(d["queries"]): d for c in doc["clusters"] for d in c.get("derived", [])}
    lag = derived["ev_d", "w3"]  # one definition, written two ways: one column
    assert lag["type"] == "int" and len(lag["columns"]) == 1
    assert lag["columns"][0].startswith("dv@") and "LAG" in lag["sql"].upper()
    other = derived["s2",]  # another definition of dv: another column
    assert other["columns"][0].startswith("dv@") and other["columns"] != lag["columns"]
    assert derived["g",]["columns"] == ["__global"]  # the constant key of key: none
    assert doc["residuals"]["s2"]["where"] == f'"{other["columns"][0]}" <= 49'  # its own dv
    counters = doc["counters"]
    assert counters["derived_columns_read"] == 4  # dv (ev_d, w3, s2), __global (g)
    assert derived["g",]["constant"] and not lag["constant"]  # added as events are read
    assert counters["derived_columns_computed"] == sum(
        1 for c in doc["clusters"] for d in c.get("derived", []) if not d["constant"])
    assert counters["derived_columns_computed"] == 2  # the two dv, whatever the clusters
    # the cost model counts the shared dv once: ev_d's and w3's scans each compute it alone
    estimates = doc["estimates"]["queries"]
    assert all(estimates[q]["in_cluster"] <= estimates[q]["alone"] for q in ("ev_d", "w3"))
    again = json.loads(run(schemas, warehouse, "w1", "g", "s2", "w3", "ev_d", "--json").output)
    assert again["plan_hash"] == doc["plan_hash"]
    text = run(schemas, warehouse, "ev_d", "w3", "s2", "g", "w1").output
    assert f"derived {lag['columns'][0]} = {lag['sql']} (int), computed once for ev_d, w3" \
        in text
    assert "derived __global = 'all' (string), a constant added as events are read for g" \
        in text


def test_statistics_count_the_snapshot_and_sample_every_file_by_its_share(tmp_path):
    _, warehouse = setup(tmp_path)  # four files of 100 rows
    path = Warehouse(warehouse).recording("ev")
    stats = table_statistics(path, {"v", "k", "nope"}, sample_rows=150)
    assert stats.rows == 400
    heads = [pq.read_table(f, columns=["k", "v"]).slice(0, 38)  # 150 / 4, rounded up
             for f in sorted(str(f) for f in Path(path).glob("*.parquet"))]
    assert stats.sample is not None
    assert stats.sample.equals(exact_pandas(pa.concat_tables(heads)))


def test_statistics_of_many_files_read_evenly_spaced_ones(tmp_path, monkeypatch):
    _, warehouse = setup(tmp_path)
    monkeypatch.setattr(shared_plan, "SAMPLE_FILES", 2)  # of the four: the first and third
    stats = table_statistics(Warehouse(warehouse).recording("ev"), {"v", "k"}, sample_rows=150)
    files = sorted(str(f) for f in Path(Warehouse(warehouse).recording("ev")).glob("*.parquet"))
    heads = [pq.read_table(f, columns=["k", "v"]).slice(0, 75) for f in files[::2]]
    assert stats.rows == 400
    assert stats.sample.equals(exact_pandas(pa.concat_tables(heads)))


def test_statistics_do_not_depend_on_how_the_files_are_named(tmp_path):
    """The same rows in files of other names (as in a regenerated recording) give the same
    sample, hence the same estimates."""
    _, warehouse = setup(tmp_path)
    first, second = Warehouse(warehouse), Warehouse(tmp_path / "again")
    table = Path(second.recording("ev"))
    shutil.copytree(first.recording("ev"), table)
    files = sorted(table.glob("*.parquet"))
    names = {f.name: f"z{len(files) - i}-{f.name}" for i, f in enumerate(files)}  # reversed
    for f in files:
        f.rename(table / names[f.name])
    for entry in (table / "_delta_log").glob("*.json"):
        text = entry.read_text()
        for old, new in names.items():
            text = text.replace(old, new)
        entry.write_text(text)
    a, b = (table_statistics(w.recording("ev"), {"v", "k", "ts"}, sample_rows=150)
            for w in (first, second))
    assert sorted(map(str, a.sample.itertuples(index=False))) == \
        sorted(map(str, b.sample.itertuples(index=False)))
    assert (a.key_count("k"), a.span("ts")) == (b.key_count("k"), b.span("ts"))


def test_replay_of_queries_on_different_recordings_says_which_each_reads():
    result = CliRunner().invoke(app, ["replay", "vitals_hr_1m", "ticks_1m", "--catalog",
                                      str(SCHEMAS)])
    assert result.exit_code == 1
    assert "vitals_hr_1m reads vitals" in result.output and "ticks_1m reads ticks" in \
        result.output


def test_replay_of_a_stage_with_a_query_on_a_recording_says_what_each_reads():
    # stages over one upstream query share its stream; a stage and a recording's query do not
    result = CliRunner().invoke(app, ["replay", "vitals_tachy_alert", "vitals_low_spo2",
                                      "--catalog", str(SCHEMAS)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert ("vitals_tachy_alert reads the output of query vitals_hr_1m, vitals_low_spo2 reads "
            "vitals") in result.output


def test_replay_of_several_queries_refuses_one_run_id():
    result = CliRunner().invoke(app, ["replay", "vitals_hr_1m", "vitals_low_spo2", "--run-id",
                                      "x", "--catalog", str(SCHEMAS)])
    assert result.exit_code == 1 and "--run-id names the run of one query" in result.output


def test_replay_of_a_query_named_twice_is_refused_before_any_run_is_made(tmp_path):
    # before: both runs were prepared (run.json written, "run ..." printed twice), then refused
    schemas, warehouse = setup(tmp_path)
    for extra in ([], ["--no-share"]):
        result = CliRunner().invoke(app, ["replay", "s1", "w1", "s1", *extra, "--catalog",
                                          str(schemas), "--warehouse", str(warehouse)])
        assert result.exit_code == 1, result.output
        assert result.output.strip() == "error: queries named more than once: s1"
        assert not (warehouse / "runs").exists()


def test_runs_that_cannot_share_are_all_replayed_on_their_own(tmp_path):
    from types import SimpleNamespace

    from engine.catalog import load_catalog
    from jobs.runs.replay import RunInfo
    from jobs.shared.shared_run import SharedReplay

    schemas, warehouse = setup(tmp_path)
    catalog = load_catalog(schemas)

    def info(query: str, exchange: str) -> RunInfo:
        return RunInfo(run_id=f"{query}-run", query=query, fingerprint="f", recording="ev",
                       input_path="", input_version=3, plan="commit", cuts=[0, 400], files=[],
                       buckets=2, operator="op", exchange=exchange)

    runner = SharedReplay(SimpleNamespace(catalog=catalog, warehouse=Warehouse(warehouse)))
    derived = [info("g", "spark"), info("ev_d", "spark")]
    assert runner.plan(derived) == (None, derived)
    mixed = [info("s1", "direct"), info("w1", "spark"), info("w2", "direct")]
    plan, alone = runner.plan(mixed)
    assert plan is not None and sorted(v.name for v in plan.views) == ["s1", "w2"]
    assert alone == [mixed[1]]


#: Pipeline stages: two over ``ev_w``'s output, one over ``ev_q``'s.
STAGES = {
    "w_top": ("name: w_top\nkind: window\ninput: {query: ev_w}\nquery:\n"
              "  window: {type: tumbling, size: 20s}\n  aggregates: {top: max(hi)}\n"),
    "w_busy": ("name: w_busy\nkind: select\ninput: {query: ev_w}\nwhere: n > 3\n"
               "query: {columns: [k, window_end, n]}\n"),
    "q_hi": ("name: q_hi\nkind: select\ninput: {query: ev_q}\nwhere: value > 0\n"
             "query: {columns: [k, event_time, value]}\n"),
}


def with_stages(tmp_path: Path) -> tuple[Path, Path]:
    schemas, warehouse = setup(tmp_path)
    for name, text in STAGES.items():
        (schemas / "queries" / f"{name}.yaml").write_text(text)
    return schemas, warehouse


def test_stages_over_one_upstream_plan_as_one_scan_of_its_output_with_their_chains(tmp_path):
    schemas, warehouse = with_stages(tmp_path)
    result = run(schemas, warehouse, "w_top", "w_busy", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["upstream"] == "ev_w"
    assert sorted(q for c in doc["clusters"] for q in c["queries"]) == ["w_busy", "w_top"]
    assert set(doc["residuals"]) == {"w_busy", "w_top"} and doc["on_its_own"] == {}
    # each stage's chain as `reprise plan STAGE --json` shows it
    for name in ("w_top", "w_busy"):
        alone = run(schemas, warehouse, name, "--json")
        assert alone.exit_code == 0, alone.output
        assert doc["chains"][name] == json.loads(alone.output)
    # no run of ev_w yet: no statistics, and the text says so
    assert doc["statistics_run"] is None and doc["estimates"]["rows"] == 0
    text = run(schemas, warehouse, "w_busy", "w_top")
    assert text.exit_code == 0, text.output
    assert "stages over query ev_w: w_busy, w_top" in text.output
    assert "no run of ev_w in the warehouse yet" in text.output
    assert doc["plan_hash"] in text.output and "rows read" in text.output
    assert "pipeline of w_top: 2 stages" in text.output
    assert "pipeline of w_busy: 2 stages" in text.output
    again = json.loads(run(schemas, warehouse, "w_busy", "w_top", "--json").output)
    assert again["plan_hash"] == doc["plan_hash"]


@pytest.mark.parametrize(("names", "said"), [
    (["w_top", "q_hi"], ["w_top reads the output of query ev_w",
                         "q_hi reads the output of query ev_q"]),
    (["w_top", "w1"], ["w_top reads the output of query ev_w", "w1 reads ev"]),
    (["s1", "w_busy"], ["s1 reads ev", "w_busy reads the output of query ev_w"]),
])
def test_stages_over_different_inputs_are_one_line_errors_saying_what_each_reads(
        tmp_path, names, said):
    schemas, warehouse = with_stages(tmp_path)
    result = run(schemas, warehouse, *names)
    assert result.exit_code == 1, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: ") and all(s in line for s in said), line

"""The family registry: one family per catalog kind, each adapting its operator, reference,
input and the columns a planner may keep; the run context built from it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from engine import registry
from engine.catalog import load_catalog, parse_query, parse_recording
from engine.family import QueryFamily
from engine.registry import FAMILIES, QUERY_KINDS, family_of, operator_for
from engine.specs import CatalogError
from engine.spj.family import analysis_inputs
from jobs.runs.run_context import RunContext

CATALOG = load_catalog(Path(__file__).resolve().parents[3] / "schemas")
QUERIES = sorted(CATALOG.queries)


def test_the_kinds_are_the_families_kinds_once_each():
    kinds = [f.kind for f in FAMILIES]
    assert sorted(kinds) == list(QUERY_KINDS) and len(set(kinds)) == len(kinds)
    assert {q.kind for q in CATALOG.queries.values()} == set(QUERY_KINDS)


def test_an_unknown_kind_names_the_file_field_and_the_known_kinds():
    rec = parse_recording({"name": "ev", "key": "k", "time": "ts",
                           "columns": {"k": "string", "ts": "timestamp"}})
    with pytest.raises(CatalogError) as err:
        parse_query({"name": "q", "kind": "sample", "input": "ev", "query": "x"}, {"ev": rec},
                    "q.yaml")
    assert (err.value.source, err.value.field) == ("q.yaml", "kind")
    assert all(kind in err.value.problem for kind in QUERY_KINDS)
    with pytest.raises(CatalogError, match="sample"):
        family_of("sample", "q.yaml")


@pytest.mark.parametrize("name", QUERIES)
def test_run_context_of_every_catalog_query(name):
    query = CATALOG.query(name)
    ctx = RunContext.of(query, CATALOG.recordings)
    assert ctx.family is family_of(query.kind)
    assert ctx.key in ctx.recording.columns
    assert ctx.recording.columns[ctx.time_column] == "timestamp"
    assert ctx.operator.output_schema == ctx.family.output_schema(query, CATALOG.recordings)
    assert ctx.operator.output_schema == operator_for(query, CATALOG.recordings).output_schema
    read = ctx.family.columns_read(query, CATALOG.recordings)
    assert set(read) <= set(ctx.recording.columns) and len(set(read)) == len(read)
    assert ctx.key in read and ctx.time_column in read
    run = ctx.family.run_columns(query, CATALOG.recordings)  # with where's columns
    assert set(read) <= set(run) <= set(ctx.recording.columns)
    if query.where is not None:
        assert query.where.columns <= set(run)
    if ctx.merged:  # several recordings merged into one input, every column kept
        assert len(query.inputs) >= 1 and set(read) == set(ctx.recording.columns)
    else:
        assert ctx.recording.name == query.input


@pytest.mark.parametrize(("name", "columns"), [
    ("vitals_hr_1m", {"patient_id", "ts", "heart_rate", "spo2"}),  # min(spo2) among them
    ("vitals_tachy_count", {"patient_id", "ts", "heart_rate"}),
])
def test_single_input_queries_read_their_key_time_and_fields(name, columns):
    ctx = RunContext.of(CATALOG.query(name), CATALOG.recordings)
    assert set(ctx.family.columns_read(ctx.query, CATALOG.recordings)) == columns


def test_analysis_inputs_of_an_spj_query_and_refusal_of_others():
    sql, schemas, _ = analysis_inputs(CATALOG.query("ads_user_campaigns"), CATALOG.recordings)
    assert "JOIN" in sql.upper() or "WHERE" in sql.upper()
    assert set(schemas) == {"ads", "ad_campaigns"}
    with pytest.raises(CatalogError, match="only spj queries"):
        analysis_inputs(CATALOG.query("vitals_hr_1m"), CATALOG.recordings)


class _SampleFamily(QueryFamily):
    """A stand-in for a new ``kind: sample`` (one recording in, some of its rows out)."""

    kind = "sample"

    def parse(self, query, recording):
        return str(query.query)

    def operator(self, query, recordings):
        return ("sample-operator", self.parse(query, self.input_recording(query, recordings)))

    def reference(self, query, recordings, op, cuts):
        return lambda events: (events, [], [])

    def columns_read(self, query, recordings):
        return tuple(self.input_recording(query, recordings).columns)


def test_a_new_family_plugs_in_through_the_registry_alone(monkeypatch):
    monkeypatch.setattr(registry, "_BY_KIND", {**registry._BY_KIND, "sample": _SampleFamily()})
    doc = {"name": "high", "kind": "sample", "input": "vitals", "query": "heart_rate > 120",
           "derive": {"day": {"sql": "date_format(ts, 'yyyy-MM-dd')", "type": "string"}}}
    query = parse_query(doc, CATALOG.recordings, "high.yaml")
    assert (query.key, query.time) == ("patient_id", "ts")
    ctx = RunContext.of(query, CATALOG.recordings)
    assert ctx.operator == ("sample-operator", "heart_rate > 120")
    assert ctx.recording.columns["day"] == "string" and not ctx.merged


@pytest.mark.parametrize("name", QUERIES)
def test_a_multi_input_family_says_how_its_recordings_merge(name):
    query = CATALOG.query(name)
    family = family_of(query.kind, query.source)
    merge = family.input_merge(query, CATALOG.recordings)
    if family.single_input:
        assert merge is None
        return
    merged = family.input_recording(query, CATALOG.recordings)
    assert [s.stream for s in merge.streams] == list(query.inputs)
    assert (merge.key_column, merge.time_column) == (merged.key, merged.time)
    named = [n for s in merge.streams for n in s.columns.values()]
    assert len(set(named)) == len(named)  # no two streams' columns meet
    assert set(named) | {merge.key_column, merge.time_column, merge.stream_column} \
        == set(merged.columns)
    for s in merge.streams:
        assert set(s.columns) == set(CATALOG.recording(s.recording).columns)


def test_only_a_time_pane_group_of_window_queries_shares_panes():
    from engine.predicate import TRUE
    from engine.sharing import PaneGroup

    names = ["beats_1m", "beats_5m_sliding"]
    windows_of = {"beats_1m": "{type: tumbling, size: 1m}",
                  "beats_5m_sliding": "{type: sliding, size: 5m, slide: 1m}"}
    queries = [parse_query(yaml.safe_load(
        f"{{name: {n}, kind: window, input: vitals, lateness: 10s, query: {{window: {w}, "
        "aggregates: {n: count(), top: max(heart_rate), total: sum(spo2)}}}"),
        CATALOG.recordings, f"{n}.yaml") for n, w in windows_of.items()]
    windows = family_of("window")
    operators = {q.name: windows.operator(q, CATALOG.recordings) for q in queries}

    def group(kind: str) -> PaneGroup:
        return PaneGroup(tuple(names), kind, 60_000_000, "patient_id", "ts", 0, TRUE, ())

    shares = windows.share_panes(group("time"), operators)
    assert set(shares) == set(names) and len({id(s) for s in shares.values()}) == 1
    stepping = shares[names[0]].member(operators[names[0]])
    assert stepping.output_schema == operators[names[0]].output_schema
    assert windows.share_panes(group("count"), operators) == {}
    assert family_of("qre").share_panes(group("time"), operators) == {}

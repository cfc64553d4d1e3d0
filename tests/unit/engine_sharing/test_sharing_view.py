"""What the families hand the shared planner: the default view (predicate and columns) and the
planner's view of a window spec; the catalog's queries on one recording plan without error."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.catalog import load_catalog
from engine.predicate import TRUE
from engine.registry import family_of
from engine.sharing import Statistics, plan_queries
from engine.windows.sharing import window_view

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(ROOT / "schemas")


def test_default_view_has_the_predicate_and_the_columns_read(catalog) -> None:
    for name, query in catalog.queries.items():
        family = family_of(query.kind)
        if not family.single_input:
            continue
        view = family.sharing_view(query, catalog.recordings)
        assert view.name == name and view.recording == query.input
        assert set(family.columns_read(query, catalog.recordings)) <= view.columns
        assert view.columns >= (query.where.columns if getattr(query, "where", None) else set())
        assert getattr(query, "where", None) is not None or view.where == TRUE


def test_window_specs_as_the_planner_sees_them(catalog) -> None:
    query = catalog.query("vitals_hr_10m_sliding")
    recording = catalog.recording(query.input)
    spec = family_of("window").parse(query, recording)
    shape, aggregates = window_view(spec, recording.time)
    assert (shape.kind, shape.size, shape.slide) == ("time", spec.size_us, spec.slide_us)
    assert [a.name for a in aggregates] == [a.name for a in spec.aggregates]
    count = family_of("window").parse(catalog.query("ticks_last10"),
                                      catalog.recording("ticks"))
    shape, _ = window_view(count, "ts")
    assert (shape.kind, shape.size, shape.slide) == ("count", count.size_events,
                                                     count.every_events)


def test_the_catalog_queries_of_a_recording_plan(catalog) -> None:
    views = [family_of(q.kind).sharing_view(q, catalog.recordings)
             for q in catalog.queries.values()
             if family_of(q.kind).single_input and q.input == "vitals"]
    plan = plan_queries(views, Statistics(rows=100_000)).to_json()
    assert sorted(q for c in plan["clusters"] for q in c["queries"]) == \
        sorted(v.name for v in views)

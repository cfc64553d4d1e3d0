"""Each family's row identity (the hook ``reprise diff`` pairs output rows by)."""

from __future__ import annotations

from pathlib import Path

from engine.catalog import load_catalog, parse_query
from engine.family import RowIdentity
from engine.registry import family_of

CATALOG = load_catalog(Path(__file__).resolve().parents[3] / "schemas")


def identity(doc: dict) -> RowIdentity:
    query = parse_query(doc, CATALOG.recordings, "q.yaml")
    return family_of(query.kind, query.source).row_identity(query, CATALOG.recordings)


def window(shape: dict, **extra) -> dict:
    return {"name": "q", "kind": "window", "input": "vitals",
            "query": {"window": shape, "aggregates": {"n": "count()"}, **extra}}


def test_windows_are_identified_by_key_and_window():
    assert identity(window({"type": "tumbling", "size": "1m"})) == RowIdentity(
        ("patient_id", "window_start", "window_end"))
    assert identity(window({"type": "count", "size": 5, "every": 2})).columns == (
        "patient_id", "window_start", "window_end", "position")
    updates = identity(window({"type": "sliding", "size": "1m", "slide": "10s"},
                              emit="updates"))
    assert updates.columns == ("patient_id", "window_start", "window_end", "final")


def test_qre_rows_by_key_and_emission_order_select_by_arrival_spj_as_multisets():
    qre = {"name": "q", "kind": "qre", "input": "vitals", "output": "every",
           "query": "iter(eps(0), atom(heart_rate > 100, 1) | atom(heart_rate <= 100, 0), +)"}
    assert identity(qre) == RowIdentity(("patient_id",), ("event_time", "arrival_seq"))
    select = {"name": "q", "kind": "select", "input": "vitals",
              "query": {"columns": ["patient_id", "heart_rate"]}}
    assert identity(select) == RowIdentity(("arrival_seq",))
    spj = CATALOG.query("ads_campaign_counts")
    assert family_of("spj").row_identity(spj, CATALOG.recordings) == RowIdentity(None)

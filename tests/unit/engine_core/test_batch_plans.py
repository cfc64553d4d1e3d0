"""Batch plans that make no sense are rejected; very fine ones are accepted with a warning."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.batch_plans import (
    MANY_BATCHES,
    InputFile,
    PlanError,
    batch_count_warning,
    commit_cuts,
    parse_plan,
)
from engine.catalog import parse_query, parse_recording
from engine.specs import CatalogError

EV = parse_recording({"name": "ev", "key": "k", "time": "ts",
                      "columns": {"k": "string", "ts": "timestamp", "v": "int"}})


@pytest.mark.parametrize("text", ["", " ", "rows:0", "rows:-3", "rows:", "rows:true", "time:0s",
                                  "time:1", "cuts:3,1", "cuts:-1", "commit:1", "bogus"])
def test_a_plan_that_makes_no_sense_is_rejected_naming_it(text):
    with pytest.raises(PlanError, match=f"invalid batch plan {text!r}"):
        parse_plan(text)


@pytest.mark.parametrize(("batch", "problem"), [
    ({"by": "rows", "rows": True}, "expected a positive integer, got True"),
    ({"by": "rows", "rows": 0}, "expected a positive integer"),
    ({"by": "time", "every": 1}, "expected a duration with a unit"),
    ({"by": "time", "every": True}, "expected a duration with a unit"),
    ({"by": "time", "every": "0s"}, "must be positive"),
])
def test_a_catalog_batch_that_makes_no_sense_is_rejected(batch, problem):
    doc = {"name": "q", "kind": "qre", "input": "ev", "query": "eps(0)", "batch": batch}
    with pytest.raises(CatalogError, match="batch") as info:
        parse_query(doc, {"ev": EV}, "q.yaml")
    assert problem in str(info.value)


@pytest.mark.parametrize(("batch", "field", "expected"), [
    ({"by": "commit", "every": "1h"}, "batch.every", "by"),
    ({"by": "rows", "rows": 10, "every": "1h"}, "batch.every", "by, rows"),
    ({"by": "time", "every": "1h", "rows": 10}, "batch.rows", "by, every"),
    ({"by": "time", "every": "1h", "evry": "2h"}, "batch.evry", "by, every"),
])
def test_a_batch_field_its_plan_does_not_have_is_an_unknown_field(batch, field, expected):
    doc = {"name": "q", "kind": "qre", "input": "ev", "query": "eps(0)", "batch": batch}
    with pytest.raises(CatalogError) as info:
        parse_query(doc, {"ev": EV}, "q.yaml")
    assert str(info.value) == f"q.yaml: field '{field}': unknown field (expected {expected})"


def test_more_batches_than_the_sane_count_give_a_one_line_warning():
    assert batch_count_warning(MANY_BATCHES, "rows:1") is None
    warning = batch_count_warning(300_000, "rows:1")
    assert warning is not None and "300,000 batches" in warning and "\n" not in warning


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 5)), max_size=20))
def test_commit_cuts_start_a_batch_where_each_commit_starts(commits):
    """Files in arrival order (commit version, then within it), each commit's files together."""
    files, offset = [], 0
    for i, (version, rows) in enumerate(sorted(commits)):
        files.append(InputFile(uri=f"f{i}", commit_version=version, rows=rows, offset=offset))
        offset += rows
    cuts = commit_cuts(files, offset)
    versions = sorted({f.commit_version for f in files})
    assert cuts[0] == 0 and cuts[-1] == offset and len(cuts) == max(2, len(versions) + 1)
    for version, cut in zip(versions[1:], cuts[1:-1], strict=True):
        first = next(f for f in files if f.commit_version == version)
        assert cut == first.offset
        assert all(f.offset + f.rows <= cut for f in files if f.commit_version < version)

"""The keyed QRE operator: equals the reference, ignores batch boundaries, buffers disorder."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.operator import SEQ, TIME, run_batches
from engine.qre.keyed import QreOperator
from engine.qre.query_spec import QreSpec
from engine.qre.stream_reference import qre_reference

QUERIES = {
    # strongly typed: compiled path
    "sum_of_last_two": "split(any, split(atom(true, v), atom(true, v), +), pi2)",
    "count_high": "iter(eps(0), atom(v > 50, 1) | atom(v <= 50, 0), +)",
    # not strongly typed (overlapping predicates): derivative path, ambiguity possible
    "ambiguous_runs": "iter(eps(0), atom(v > 20, v) | atom(v > 60, 1), +)",
    # events the query cannot evaluate (v == 30: the predicates; v == 60 or v < 30 with
    # v % 7 == 0: the atom's value) are quarantined by the operator and the reference alike
    "failing_atoms": "iter(eps(0), atom(10 // (v - 30) >= 0, 1000 // (v - 60)) | "
                     "atom(10 // (v - 30) < 0, 100 // (v % 7)), +)",
    # a fold that fails (x % 10 == 5) keeps a Failure in the state: later outputs are error rows
    "sticky_failure": "iter(eps(0), atom(true, v), (a, x) -> a + 100 // (x % 10 - 5))",
}


def spec(text: str, output: str, lateness: int) -> QreSpec:
    return QreSpec(key="k", key_type="string", lateness_us=lateness, text=text, output=output,
                   timestamp_columns=(), fields=("k", "v"))


@st.composite
def streams(draw):
    n = draw(st.integers(0, 40))
    keys = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    base = np.cumsum(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)) or [0])[:n]
    jitter = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    events = pd.DataFrame({
        "k": pd.Series(keys, dtype=object),
        TIME: (np.asarray(base, dtype="int64") - np.asarray(jitter, dtype="int64")) * 1000,
        SEQ: np.arange(n, dtype="int64"),
        "v": pd.Series(draw(st.lists(st.one_of(st.none(), st.integers(0, 100)), min_size=n,
                                     max_size=n)), dtype=object),
    })
    plans = [sorted(draw(st.lists(st.integers(0, n), max_size=6))) for _ in range(2)]
    return events, plans


def run_all(op: QreOperator, batches: list[pd.DataFrame]):
    """(output, late, final state, rejected) of running ``op`` over ``batches``."""
    state, outputs, lates, rejected = op.init(), [], [], []
    for batch in batches:
        result = op.step(state, batch)
        state = result.state
        outputs.append(result.output)
        lates.append(result.late)
        rejected.append(result.rejected)
    outputs.append(op.finish(state))
    frames = [pd.concat([x for x in f if not x.empty], ignore_index=True)
              if any(not x.empty for x in f)
              else pd.DataFrame(columns=[*op.output_schema.names, SEQ]) for f in
              (outputs, lates, rejected)]
    return frames[0], frames[1], state, frames[2]


def test_events_with_a_null_field_are_rejected_with_a_reason():
    op = QreOperator(spec("iter(eps(0), atom(true, v), +)", "every", lateness=0))
    events = pd.DataFrame({"k": ["a", "a", "a"], TIME: [1, 2, 3], SEQ: [0, 1, 2],
                           "v": [1, None, 3]})
    result = op.step(op.init(), events)
    assert result.rejected[SEQ].tolist() == [1]
    assert result.rejected["reason"].iloc[0] == (
        "the query reads 'v' but the event has no value for it")
    assert result.output["value"].tolist() == [1.0, 4.0]  # the null event is skipped


def split(events: pd.DataFrame, cuts: list[int]) -> list[pd.DataFrame]:
    bounds = [0, *cuts, len(events)]
    return [events.iloc[a:b] for a, b in itertools.pairwise(bounds)]


def rows(frame: pd.DataFrame) -> list[tuple]:
    return sorted(tuple(r) for r in frame.astype(object).where(frame.notna(), None)
                  .itertuples(index=False))


@pytest.mark.parametrize("name", sorted(QUERIES))
@pytest.mark.parametrize("output", ["every", "changes", "final"])
@settings(max_examples=25, deadline=None)
@given(case=streams(), lateness=st.sampled_from([0, 2000, 10_000]))
def test_operator_equals_reference_under_any_plan(name, output, case, lateness):
    events, (plan_a, plan_b) = case
    qre = spec(QUERIES[name], output, lateness)
    op = QreOperator(qre)
    out_a, late_a, state_a, rejected_a = run_all(op, split(events, plan_a))
    out_b, late_b, state_b, rejected_b = run_all(op, split(events, plan_b))
    reference, late_ref, rejected_ref = qre_reference(events, qre)
    assert rows(out_a) == rows(reference) == rows(out_b)
    assert sorted(late_a[SEQ].tolist()) == late_ref == sorted(late_b[SEQ].tolist())
    assert sorted(rejected_a[SEQ].tolist()) == rejected_ref == sorted(rejected_b[SEQ].tolist())
    plain = ["k", "max_t", "pending", "last"]
    assert rows(state_a[plain]) == rows(state_b[plain])
    if name != "ambiguous_runs":  # compiled states pickle canonically; derivative ones do not
        assert op.state_codec.digest(state_a) == op.state_codec.digest(state_b)


def test_disorder_within_lateness_is_reordered_by_event_time():
    qre = spec("split(any, atom(true, v), pi2)", "every", lateness=10)  # the latest item
    op = QreOperator(qre)
    events = pd.DataFrame({"k": ["a", "a", "a"], TIME: [100, 95, 120], SEQ: [0, 1, 2],
                           "v": [1, 2, 3]})
    out, late, _, _ = run_batches(op, [events])
    out = out.sort_values("event_time")
    # 95 arrives after 100 but precedes it in event time; 100 - 10 <= 95, so it is not late
    assert late.empty
    assert out["value"].tolist() == [2.0, 1.0, 3.0]
    assert out["arrival_seq"].tolist() == [1, 0, 2]


def test_query_file_reading_an_unknown_column_is_rejected_at_load():
    from engine.catalog import parse_query
    from engine.qre.query_spec import parse_qre_query
    from engine.specs import CatalogError, RecordingSpec

    recording = RecordingSpec(name="r", columns={"k": "string", "ts": "timestamp", "v": "int"},
                              key="k", time="ts")
    doc = {"name": "q", "kind": "qre", "input": "r", "query": "iter(eps(0), atom(w > 1, 1), +)"}
    query = parse_query(doc, {"r": recording}, source="q.yaml")
    with pytest.raises(CatalogError, match=r"q.yaml: field 'query': reads 'w', not a column"):
        parse_qre_query(query, recording)

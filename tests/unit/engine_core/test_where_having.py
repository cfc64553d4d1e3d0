"""``where:`` in front of window and QRE operators (filtered events never move a watermark),
``having:`` behind window operators (close and updates mode), and ``key: none`` (one group)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from engine import filtered
from engine.catalog import parse_query, parse_recording, reads_history
from engine.operator import SEQ, TIME, run_batches
from engine.registry import family_of, input_recording, operator_for, reference_for
from engine.specs import GLOBAL_KEY, GLOBAL_VALUE, CatalogError
from engine.windows.having import HavingOperator

EV = parse_recording({"name": "ev", "key": "k", "time": "ts",
                      "columns": {"k": "string", "ts": "timestamp", "v": "int", "x": "double"}})
RECORDINGS = {"ev": EV}


def window(aggregates: dict | None = None, **fields: object):
    body = {"window": {"type": "tumbling", "size": "10us"},
            "aggregates": aggregates or {"n": "count()", "s": "sum(v)", "hi": "max(x)"}}
    body.update(fields.pop("body", {}))
    doc = {"name": "w", "kind": "window", "input": "ev", "lateness": "5us", "query": body,
           **fields}
    return parse_query(doc, RECORDINGS, "w.yaml")


def frame(rows: list[tuple]) -> pd.DataFrame:
    """Events (k, t in us, v, x) in arrival order."""
    k, t, v, x = zip(*rows, strict=True) if rows else ((), (), (), ())
    t = np.asarray(t, dtype="int64")
    return pd.DataFrame({"k": pd.Series(k, dtype=object),
                         "ts": pd.to_datetime(t, unit="us", utc=True),
                         "v": pd.array(v, dtype="Int64"), "x": pd.Series(x, dtype="float64"),
                         TIME: t, SEQ: np.arange(len(t), dtype="int64")})


def run(query, events: pd.DataFrame, cuts: list[int]) -> tuple[list[tuple], list[int]]:
    op = operator_for(query, RECORDINGS)
    bounds = [0, *cuts, len(events)]
    out, late, _, _ = run_batches(op, [events.iloc[a:b] for a, b in itertools.pairwise(bounds)])
    rows = sorted(tuple(None if pd.isna(v) else v for v in r)
                  for r in out.drop(columns=["final"], errors="ignore")
                  .itertuples(index=False))
    return rows, sorted(late[SEQ].tolist()) if not late.empty else []


def reference(query, events: pd.DataFrame, cuts: list[int] | None = None
              ) -> tuple[list[tuple], list[int]]:
    op = operator_for(query, RECORDINGS)
    out, late, _ = reference_for(query, RECORDINGS, op, cuts)(events)
    rows = sorted(tuple(None if pd.isna(v) else v for v in r)
                  for r in out.drop(columns=["final", "batch"], errors="ignore")
                  .itertuples(index=False))
    return rows, sorted(late)


def test_events_failing_where_never_move_the_watermark():
    """Lateness 5: the event at t=100 that fails ``v < 50`` would make t=20 late; filtered
    out, it reaches no operator, so t=20 is on time and its window is emitted."""
    events = frame([("a", 10, 1, 0.0), ("a", 100, 99, 0.0), ("a", 20, 2, 1.0)])
    unfiltered = window()
    assert run(unfiltered, events, [])[1] == [2]
    query = window(where="v < 50")
    rows, late = run(query, events, [1, 2])
    assert late == [] and rows == reference(query, events)[0]
    assert [r[3:] for r in rows] == [(1, 1, 0.0), (1, 2, 1.0)]  # (n, s, hi) of [10,20), [20,30)


@pytest.mark.parametrize("where", ["v IS NULL AND v IS NOT NULL", "x IS NULL OR x IS NOT NULL"])
def test_a_where_whose_canonical_form_is_a_constant_filters_the_reference_too(where):
    """A condition that names columns but is always FALSE (or TRUE) has no columns in its
    canonical form; the reference tests it on every row as the run does."""
    events = frame([("a", 10, 1, 0.0), ("a", 12, None, None), ("b", 30, 3, 0.5)])
    query = window(where=where)
    assert not query.where.columns
    rows, _ = run(query, events, [1])
    assert rows == reference(query, events)[0]
    assert len(rows) == (0 if "AND" in where else 2)  # (a: [10, 20), b: [30, 40))


def test_where_filters_qre_events_before_the_watermark_and_the_quarantine():
    """A QRE reading ``v`` quarantines events with v null, unless ``where`` drops them first."""
    doc = {"name": "q", "kind": "qre", "input": "ev", "lateness": "5us", "output": "every",
           "where": "v IS NOT NULL AND x >= 0", "query": "iter(eps(0), atom(v > 1, 1), +)"}
    query = parse_query(doc, RECORDINGS, "q.yaml")
    events = frame([("a", 10, 2, 1.0), ("a", 11, None, 1.0), ("a", 100, 5, -1.0),
                    ("a", 12, 3, 2.0)])
    op = operator_for(query, RECORDINGS)
    state = op.init()
    late, rejected = [], []
    for i in range(len(events)):
        result = op.step(state, events.iloc[i:i + 1])
        state = result.state
        late += result.late[SEQ].tolist() if not result.late.empty else []
        rejected += result.rejected[SEQ].tolist() if not result.rejected.empty else []
    assert late == [] and rejected == []  # t=100 filtered out; the null v never reached it
    _, ref_late, ref_rejected = reference_for(query, RECORDINGS, op)(events)
    assert ref_late == [] and ref_rejected == []


@pytest.mark.parametrize("cuts", [[], [2, 2, 5], list(range(12))])
@pytest.mark.parametrize("emit", ["close", "updates"])
def test_having_emits_only_rows_whose_aggregates_pass(cuts, emit):
    events = frame([("a", t, t % 7, t / 3) for t in (0, 1, 2, 12, 13, 25, 26, 27, 28, 41)]
                   + [("b", 3, None, 1.0), ("b", 4, 5, None)])
    plain = window(body={"emit": emit})
    query = window(body={"emit": emit, "having": "n >= 2 AND NOT s < 3"})
    assert isinstance(operator_for(query, RECORDINGS), HavingOperator)
    all_rows, _ = run(plain, events, cuts)
    rows, _ = run(query, events, cuts)
    # n is the 4th output column (k, window_start, window_end, n, s, hi), s the 5th
    assert rows == [r for r in all_rows if r[3] >= 2 and r[4] is not None and r[4] >= 3]
    assert 0 < len(rows) < len(all_rows)
    plan = [0, *cuts, len(events)] if emit == "updates" else None
    assert rows == reference(query, events, plan)[0]


@pytest.mark.parametrize(("having", "problem"), [
    ("n >=", "cannot parse"), ("heart_rate > 3", "heart_rate"), ("n > 'many'", "n"),
    ("v > 1", "v"), ("", "expected a SQL condition")])
def test_bad_having_names_file_and_field(having, problem):
    query = window(body={"having": having})
    with pytest.raises(CatalogError) as err:
        operator_for(query, RECORDINGS)
    assert str(err.value).startswith("w.yaml: field 'query.having': ")
    assert problem in err.value.problem


def test_key_none_is_one_group_for_the_whole_recording():
    query = window(key="none")
    assert query.key == GLOBAL_KEY and GLOBAL_KEY in query.derived
    recording = input_recording(query, RECORDINGS)
    assert recording.columns[GLOBAL_KEY] == "string"
    events = frame([("a", 1, 1, 0.5), ("b", 2, 2, 1.5), (None, 3, 4, 0.0), ("c", 14, 8, 2.0)])
    events[GLOBAL_KEY] = GLOBAL_VALUE  # what the runner derives for every event
    rows, late = run(query, events, [1, 3])
    assert late == []
    op = operator_for(query, RECORDINGS)
    assert GLOBAL_KEY not in op.output_schema.names  # no key column in the output
    assert op.output_schema.names[:2] == ["window_start", "window_end"]
    assert GLOBAL_KEY not in family_of("window").row_identity(query, RECORDINGS).columns
    assert [r[2:4] for r in rows] == [(3, 7), (1, 8)]  # every key's events in one window
    assert rows == reference(query, events)[0]
    read = family_of("window").run_columns(query, RECORDINGS)
    assert GLOBAL_KEY in read and "k" not in read


def test_key_none_may_not_clash_with_a_derived_column():
    with pytest.raises(CatalogError, match=rf"w\.yaml: field 'derive\.{GLOBAL_KEY}'"):
        window(key="none", derive={GLOBAL_KEY: {"sql": "'x'", "type": "string"}})


def test_only_window_expressions_make_the_runner_read_the_whole_input():
    assert not reads_history({GLOBAL_KEY: (f"'{GLOBAL_VALUE}'", "string")})
    assert not reads_history({"day": ("date_format(ts, 'yyyy-MM-dd')", "string")})
    assert reads_history({"day": ("date_format(ts, 'yyyy-MM-dd')", "string"),
                          "dv": ("v - lag(v) over (partition by k order by __seq)", "int")})


def test_a_where_on_the_key_makes_the_runner_hand_key_values_not_codes():
    assert operator_for(window(), RECORDINGS).codes_keys
    assert operator_for(window(where="v < 3"), RECORDINGS).codes_keys
    assert not operator_for(window(where="k = 'a' OR v < 3"), RECORDINGS).codes_keys


def test_filters_sharing_their_predicate_pass_each_batch_once(monkeypatch):
    """Members of a shared job with one residual predicate share its passing rows: a batch
    (the same frame) is filtered once; a different frame, or after ``reset``, again."""
    calls = []
    real = filtered.passing
    monkeypatch.setattr(filtered, "passing", lambda f, p: calls.append(len(f)) or real(f, p))
    where = window(where="v < 50").where
    shared = filtered.Passing(where)
    inner = [operator_for(window(), RECORDINGS), operator_for(window({"s": "sum(v)"}),
                                                                RECORDINGS)]
    ops = [filtered.FilteredOperator(op, where, shared) for op in inner]
    alone = [filtered.FilteredOperator(op, where) for op in inner]
    events = frame([("a", 10, 1, 0.0), ("a", 100, 99, 0.0), ("a", 20, 2, 1.0)])
    for op, plain in zip(ops, alone, strict=True):
        got, want = op.step(op.init(), events), plain.step(plain.init(), events)
        pd.testing.assert_frame_equal(got.output, want.output)
    assert calls == [3, 3, 3]  # once for the shared pair, once for each unshared filter
    ops[0].step(ops[0].init(), events.copy())
    shared.reset()
    ops[1].step(ops[1].init(), events)
    assert calls == [3, 3, 3, 3, 3]
    with pytest.raises(ValueError, match="own predicate"):
        filtered.FilteredOperator(inner[0], window(where="v < 3").where, shared)

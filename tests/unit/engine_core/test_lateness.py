"""The one lateness policy (engine/lateness.py) by hand-checked examples: the per-key watermark
before each event, skipped (rejected) rows, the max after the batch, the reason text, and the
batch split the window operators use."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.lateness import Marks, arrival_order, late_reasons, late_split, split_batch
from engine.operator import REASON, SEQ, TIME
from engine.ordering import NO_TIME, max_before


def test_late_is_below_the_max_seen_before_minus_the_lateness():
    # key 0: 10, 20, 5 -> 5 < 20 - 4; key 1 (max 8 before the batch): 7 on time, 3 < 8 - 4
    code = np.array([0, 0, 0, 1, 1])
    t = np.array([10, 20, 5, 7, 3])
    split = late_split(code, t, np.array([NO_TIME, 8]), 4)
    assert split.before.tolist() == [NO_TIME, 10, 20, 8, 8]
    assert split.late.tolist() == [False, False, True, False, True]
    assert split.after.tolist() == [20, 8]


def test_an_event_exactly_at_the_watermark_is_on_time():
    split = late_split(np.array([0, 0, 0]), np.array([10, 8, 7]), np.array([NO_TIME]), 2)
    assert split.late.tolist() == [False, False, True]  # watermark 8: 8 on time, 7 late


def test_skipped_rows_are_never_late_and_move_no_max():
    # the rejected 100 would make 50 late; it is skipped, so 50 starts the key
    split = late_split(np.array([0, 0, 0, 0]), np.array([100, 50, 60, 1]),
                       np.array([NO_TIME]), 5, skip=np.array([True, False, False, True]))
    assert split.before.tolist() == [NO_TIME, NO_TIME, 50, 60]
    assert split.late.tolist() == [False, False, False, False]
    assert split.after.tolist() == [60]


def test_a_key_without_rows_keeps_its_prior_max():
    split = late_split(np.array([1]), np.array([4]), np.array([30, NO_TIME, 7]), 0)
    assert split.after.tolist() == [30, 4, 7]


def test_arrival_order_groups_by_key_then_arrival():
    order = arrival_order(np.array([1, 0, 1, 0]), np.array([3, 2, 0, 1]))
    assert order.tolist() == [3, 1, 2, 0]


def test_the_reason_names_the_event_time_the_watermark_and_the_lateness_in_iso():
    assert late_reasons(np.array([0]), np.array([15_000_000]), 10_000_000) == [
        "event time 1970-01-01T00:00:00.000000Z is below the key's watermark "
        "1970-01-01T00:00:05.000000Z (max event time seen 1970-01-01T00:00:15.000000Z minus "
        "lateness 10s)"]


def test_split_batch_returns_late_rows_by_arrival_and_on_time_rows_by_key():
    prior = Marks.of(np.array(["b"], dtype=object), np.array([100]))
    batch = pd.DataFrame({"k": ["b", "a", "b", "a", "a"], TIME: [90, 50, 120, 10, 60],
                          SEQ: [0, 1, 2, 3, 4], "v": [1, 2, 3, 4, 5]})
    out = split_batch(batch, prior, "k", 20, keep=["k", TIME, SEQ, "v"])
    # a: 50, then 10 < 50 - 20 late, 60; b (max 100): 90 on time, 120
    assert out.late[SEQ].tolist() == [3]
    assert "below the key's watermark" in out.late[REASON].iloc[0]
    assert out.on_time["v"].tolist() == [2, 5, 1, 3]
    assert out.code.tolist() == [0, 0, 1, 1]
    assert out.marks.keys.tolist() == ["a", "b"]
    assert out.marks.before.tolist() == [NO_TIME, 100]
    assert out.marks.after.tolist() == [60, 120]
    assert out.marks.watermark(20).tolist() == [40, 100]


def test_a_qre_late_event_has_the_same_reason_text_as_a_window_late_event():
    from engine.catalog import parse_query, parse_recording
    from engine.qre.keyed import QreOperator
    from engine.qre.query_spec import parse_qre_query

    rec = parse_recording({"name": "v", "key": "k", "time": "ts",
                           "columns": {"k": "string", "ts": "timestamp", "x": "int"}})
    query = parse_query({"name": "q", "kind": "qre", "input": "v", "lateness": "10s",
                         "query": "iter(eps(0), atom(true, x), +)"}, {"v": rec}, source="q.yaml")
    op = QreOperator(parse_qre_query(query, rec))
    batch = pd.DataFrame({"k": ["a", "a"], TIME: [15_000_000, 0], SEQ: [0, 1], "x": [1, 2]})
    late = op.step(op.init(), batch).late
    assert late[REASON].tolist() == [
        "event time 1970-01-01T00:00:00.000000Z is below the key's watermark "
        "1970-01-01T00:00:05.000000Z (max event time seen 1970-01-01T00:00:15.000000Z minus "
        "lateness 10s)"]


@pytest.mark.parametrize("in_order", [True, False], ids=["in-order", "disordered"])
def test_max_before_is_the_running_max_of_each_key(in_order):
    rng = np.random.default_rng(int(in_order))
    code = np.sort(rng.integers(0, 30, 400))
    values = rng.integers(-50, 50, 400)
    if in_order:  # each key's values never go down (the common case: a shortcut)
        values = np.sort(values + code * 1000) - code * 1000
    start = np.where(rng.random(30) < 0.3, NO_TIME, rng.integers(-60, 60, 30))
    before, running = max_before(code, values, start)
    expected_before, expected_running, last = [], [], {}
    for c, v in zip(code.tolist(), values.tolist(), strict=True):
        expected_before.append(max(last.get(c, NO_TIME), int(start[c])))
        last[c] = max(last.get(c, v), v)
        expected_running.append(last[c])
    assert before.tolist() == expected_before
    assert running.tolist() == expected_running


@given(st.lists(st.integers(-5, 50), unique=True), st.booleans())
def test_marks_of_keys_in_any_order_give_each_key_its_time(keys, shuffled):
    keys = sorted(keys, reverse=shuffled)  # (sorted keys, as a state keeps them, or reversed)
    times = np.arange(len(keys), dtype="int64") * 7
    marks = Marks.of(np.array(keys, dtype="int64"), times)
    assert marks.keys.tolist() == sorted(keys)
    assert dict(zip(marks.keys.tolist(), marks.after.tolist(), strict=True)) == dict(
        zip(keys, times.tolist(), strict=True))
    assert marks.before.tolist() == marks.after.tolist()

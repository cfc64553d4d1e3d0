"""Window aggregates by example: the spec syntax and its errors, udafs, the HyperLogLog sketch,
numerics, tie and null rules, updates mode, late keys and empty windows."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pandas as pd
import pytest

from engine.catalog import parse_query
from engine.operator import SEQ, TIME, run_batches
from engine.specs import CatalogError, RecordingSpec
from engine.windows import (
    Aggregate,
    SlidingWindow,
    TumblingWindow,
    WindowSpec,
    hll,
    parse_window_query,
    window_reference,
)
from engine.windows.udaf import UdafError, parse_udaf

VITALS = RecordingSpec(name="vitals", columns={"patient_id": "string", "ts": "timestamp",
                                               "heart_rate": "int", "spo2": "int",
                                               "note": "string", "ok": "bool"},
                       key="patient_id", time="ts")
RMS = {"init": "(0, 0.0)", "add": "(a, x) -> (a[0] + 1, a[1] + x * x)",
       "merge": "(a, b) -> (a[0] + b[0], a[1] + b[1])", "finish": "a -> sqrt(a[1] / a[0])"}
SOURCE = "schemas/queries/q.yaml"


def query(aggregates: dict, **extra) -> dict:
    return {"name": "q", "kind": "window", "input": "vitals", "lateness": "10s",
            "query": {"window": {"type": "sliding", "size": "1m", "slide": "10s"},
                      "aggregates": aggregates, **extra}}


def parse(doc: dict) -> WindowSpec:
    return parse_window_query(parse_query(doc, {"vitals": VITALS}, SOURCE), VITALS)


def spec(aggregates: tuple[Aggregate, ...], **kw) -> WindowSpec:
    base = {"key": "k", "size_us": 10, "lateness_us": 0, "aggregates": aggregates,
            "value_types": {"v": "double", "w": "double", "s": "string"}, "key_type": "string"}
    return WindowSpec(**{**base, **kw})


def events(times: list[int], **columns: list) -> pd.DataFrame:
    n = len(times)
    return pd.DataFrame({"k": columns.pop("k", ["a"] * n), TIME: times, SEQ: range(n),
                         **columns})


def test_the_full_syntax_parses():
    parsed = parse(query({
        "n": "count()", "hr_sd": "stddev(heart_rate)", "hr_var": "variance(heart_rate)",
        "sd_pop": "stddev_pop(spo2)", "var_pop": "var_pop(spo2)", "first_note": "first(note)",
        "last_hr": "last(heart_rate)", "hr_at_min_spo2": "argmin( heart_rate , spo2 )",
        "note_at_max_hr": "argmax(note, heart_rate)", "notes": "count_distinct(note)",
        "approx_notes": "approx_count_distinct(note)", "hr_median": "median(heart_rate)",
        "hr_p95": "percentile(heart_rate, 0.95)", "hr_rms": "rms(heart_rate)",
        "oks": "count(ok)"}, udafs={"rms": RMS}, emit="updates"))
    by_name = {a.name: a for a in parsed.aggregates}
    assert by_name["hr_at_min_spo2"] == Aggregate("hr_at_min_spo2", "argmin", "heart_rate",
                                                  by="spo2")
    assert by_name["hr_median"].p == 0.5 and by_name["hr_p95"].p == 0.95
    assert by_name["hr_rms"].fn == "rms" and parsed.udaf("rms").width == 2
    assert parsed.emit == "updates"
    assert parsed.value_types == {"heart_rate": "int", "spo2": "int", "note": "string",
                                  "ok": "bool"}


@pytest.mark.parametrize(("aggregates", "extra", "field", "message"), [
    ({"x": "mode(heart_rate)"}, {}, "query.aggregates.x", "unknown aggregate 'mode'"),
    ({"x": "median(heart_rate, spo2)"}, {}, "query.aggregates.x", "median takes 1 argument"),
    ({"x": "argmin(heart_rate)"}, {}, "query.aggregates.x", "argmin takes 2 argument"),
    ({"x": "stddev(note)"}, {}, "query.aggregates.x", "needs a column of type int or double;"),
    ({"x": "argmax(heart_rate, note)"}, {}, "query.aggregates.x", "'note' has type string"),
    ({"x": "first(ok)"}, {}, "query.aggregates.x", "'ok' has type bool"),
    ({"x": "percentile(heart_rate, 95)"}, {}, "query.aggregates.x", "fraction between 0 and 1"),
    ({"x": "percentile(heart_rate, p)"}, {}, "query.aggregates.x", "fraction between 0 and 1"),
    ({"x": "count_distinct(nope)"}, {}, "query.aggregates.x", "'nope' is not in recording"),
    ({"x": "rms(heart_rate)"}, {}, "query.aggregates.x", "unknown aggregate 'rms'"),
    ({"x": "rms(heart_rate)"}, {"udafs": {"rms": {**RMS, "add": "(a, x) -> a +"}}},
     "query.udafs.rms.add", "does not parse"),
    ({"x": "rms(heart_rate)"}, {"udafs": {"rms": {**RMS, "merge": "a -> a"}}},
     "query.udafs.rms.merge", "lambda of 2 parameter"),
    ({"x": "rms(heart_rate)"}, {"udafs": {"rms": {**RMS, "init": "heart_rate"}}},
     "query.udafs.rms.init", "must be a constant"),
    ({"x": "rms(heart_rate)"}, {"udafs": {"rms": {**RMS, "finish": "a -> a"}}},
     "query.udafs.rms.finish", "not a tuple"),
    ({"x": "rms(heart_rate)"}, {"udafs": {"rms": {**RMS, "add": "(a, x) -> a[0] + x"}}},
     "query.udafs.rms.add", "tuple of 2 numbers"),
    ({"x": "rms(heart_rate)"}, {"udafs": {"rms": {**RMS, "finish": "a -> cbrt(a[0])"}}},
     "query.udafs.rms.finish", "does not parse"),
    ({"x": "sum(heart_rate)"}, {"udafs": {"sum": RMS}}, "query.udafs.sum",
     "not a built-in aggregate"),
    ({"x": "count()"}, {"udafs": {"rms": {k: RMS[k] for k in ("init", "add", "merge")}}},
     "query.udafs.rms.finish", "is required"),
    ({"x": "count()"}, {"udafs": {"rms": {**RMS, "merj": "(a, b) -> a"}}},
     "query.udafs.rms.merj", "unknown field (expected init, add, merge, finish)"),
    ({"x": "count()"}, {"emit": "sometimes"}, "query.emit", "expected close or updates"),
    ({"x": "count()"}, {"windw": {}}, "query.windw", "unknown field"),
    ({"final": "count()"}, {}, "query.aggregates.final", "reserved"),
])
def test_spec_errors_name_the_file_and_the_field(aggregates, extra, field, message):
    with pytest.raises(CatalogError) as info:
        parse(query(aggregates, **extra))
    assert info.value.source == SOURCE and info.value.field == field
    assert message in info.value.problem


@pytest.mark.parametrize(("window", "field", "expected"), [
    ({"type": "tumbling", "size": "1m", "slide": "30s"}, "query.window.slide", "type, size"),
    ({"type": "sliding", "size": "1m", "slide": "30s", "gap": "5s"}, "query.window.gap",
     "type, size, slide"),
    ({"type": "session", "gap": "5s", "size": "1m"}, "query.window.size", "type, gap"),
    ({"type": "count", "size": 10, "every": 5, "slide": 2}, "query.window.slide",
     "type, size, every"),
    ({"type": "tumbling", "size": "1m", 3: "x"}, "query.window.3", "type, size"),
])
def test_a_window_field_its_type_does_not_have_is_an_unknown_field(window, field, expected):
    doc = query({"n": "count()"})
    doc["query"]["window"] = window
    with pytest.raises(CatalogError) as info:
        parse(doc)
    assert str(info.value) == f"{SOURCE}: field '{field}': unknown field (expected {expected})"


def test_a_key_column_named_like_a_state_column_is_rejected():
    recording = RecordingSpec(name="r", columns={"rows": "string", "ts": "timestamp",
                                                 "v": "int"}, key="rows", time="ts")
    doc = {**query({"n": "count()"}), "input": "r"}
    with pytest.raises(CatalogError, match="clash") as info:
        parse_window_query(parse_query(doc, {"r": recording}, SOURCE), recording)
    assert info.value.field == "query.aggregates"


def test_udaf_rms_and_the_extra_functions():
    udaf = parse_udaf("rms", RMS)
    values = [3.0, -4.0, 12.0]
    assert udaf.fold(values) == pytest.approx(math.sqrt(np.mean(np.square(values))))
    span = parse_udaf("span", {"init": "(1e300, -1e300)", "add": "(a, x) -> (min(a[0], x), "
                               "max(a[1], x))", "merge": "(a, b) -> (min(a[0], b[0]), "
                               "max(a[1], b[1]))", "finish": "a -> log(exp(abs(a[1] - a[0])))"})
    assert span.fold(values) == pytest.approx(16.0)
    with pytest.raises(UdafError, match="strings are not supported"):
        parse_udaf("bad", {**RMS, "finish": "a -> 'x'"})


def run(op, *batches: pd.DataFrame) -> pd.DataFrame:
    out, _, _, _ = run_batches(op, list(batches))
    return out


def test_udaf_on_a_sliding_window_merges_slices():
    s = spec((Aggregate("r", "rms", "v"),), size_us=4, slide_us=2, kind="sliding",
             udafs=(parse_udaf("rms", RMS),))
    out = run(SlidingWindow(s), events([0, 1, 2, 3, 5], v=[1.0, np.nan, 2.0, 3.0, 4.0]))
    got = dict(zip(out["window_start"], out["r"], strict=True))
    assert got == pytest.approx({-2: 1.0, 0: math.sqrt(14 / 3), 2: math.sqrt(29 / 3),
                                 4: 4.0})


def test_variance_is_stable_far_from_zero():
    """Moments merge by deviations from the mean, not by sums of squares: at 1e6 + noise the
    textbook formula loses about 5 digits, the moments keep the 1e-9 tolerance (their relative
    error grows like eps * |mean| / stddev)."""
    rng = np.random.default_rng(3)
    v = 1e6 + rng.integers(0, 5, 200) + rng.integers(0, 4, 200) / 4
    s = spec((Aggregate("sd", "stddev", "v"), Aggregate("var", "var_pop", "v")),
             size_us=40, slide_us=10, kind="sliding")
    batches = [events(list(range(200)), v=list(v)).iloc[i:i + 17] for i in range(0, 200, 17)]
    out = run(SlidingWindow(s), *batches)
    worst_textbook = 0.0
    for row in out.itertuples(index=False):
        window = v[max(row.window_start, 0):row.window_start + 40]
        exact = statistics.pvariance(window)
        assert row.sd == pytest.approx(statistics.stdev(window), rel=1e-9)
        assert row.var == pytest.approx(exact, rel=1e-9)
        textbook = (np.sum(window ** 2) - np.sum(window) ** 2 / len(window)) / len(window)
        worst_textbook = max(worst_textbook, abs(textbook - exact) / exact)
    assert worst_textbook > 1e-7


def test_first_last_argmin_argmax_break_ties_by_time_then_arrival():
    aggs = (Aggregate("f", "first", "s"), Aggregate("l", "last", "s"),
            Aggregate("lo", "argmin", "s", by="v"), Aggregate("hi", "argmax", "s", by="v"))
    frame = events([5, 3, 3, 7, 7], s=["a", "b", "c", "d", "e"], v=[1.0, 2.0, 1.0, 2.0, 1.0])
    out = run(TumblingWindow(spec(aggs, lateness_us=10)), frame)
    assert out[["f", "l", "lo", "hi"]].values.tolist() == [["b", "e", "c", "b"]]


def test_percentiles_interpolate_linearly_like_numpy():
    aggs = (Aggregate("m", "median", "v", p=0.5), Aggregate("p9", "percentile", "v", p=0.9),
            Aggregate("p1", "percentile", "v", p=1.0))
    out = run(TumblingWindow(spec(aggs)), events([0, 1, 2, 3], v=[4.0, 1.0, 3.0, 2.0]))
    assert out[["m", "p9", "p1"]].values.tolist() == [[2.5, pytest.approx(3.7), 4.0]]


def test_nulls_are_ignored_and_an_all_null_window_gives_null_or_zero():
    aggs = (Aggregate("n", "count", None), Aggregate("nv", "count", "v"),
            Aggregate("s", "sum", "v"), Aggregate("sd", "stddev", "v"),
            Aggregate("f", "first", "v"), Aggregate("m", "median", "v", p=0.5),
            Aggregate("d", "count_distinct", "v"), Aggregate("a", "approx_count_distinct", "v"),
            Aggregate("lo", "argmin", "s", by="v"))
    out = run(TumblingWindow(spec(aggs)),
              events([0, 1, 12], v=[np.nan, np.nan, 2.0], s=["x", None, "y"]))
    empty, full = out.astype(object).where(out.notna(), None).to_dict("records")
    assert [empty[c] for c in ("n", "nv", "s", "sd", "f", "m", "d", "a", "lo")] == \
        [2, 0, None, None, None, None, 0, 0, None]
    assert [full[c] for c in ("n", "nv", "s", "sd", "f", "m", "d", "a", "lo")] == \
        [1, 1, 2.0, None, 2.0, 2.0, 1, 1, "y"]


def test_hll_hashing_is_fixed_and_type_blind():
    """Sketch state is persisted: the hash must never change (these constants pin it)."""
    assert hll.hash64(np.array([1.0, 0.0, -0.0]))[0] == np.uint64(0x88D7C35BBBF3EDED)
    numbers = hll.hash64(np.array([0.0, -0.0, 3.0]))
    assert numbers[0] == numbers[1] and numbers[2] == hll.hash64(np.array([3]))[0]
    assert hll.hash64(np.array(["patient-1"], dtype=object))[0] == np.uint64(0x3CEE7980B2DBD172)


def test_approx_count_distinct_is_within_a_few_standard_errors():
    rng = np.random.default_rng(11)
    values = rng.integers(0, 60_000, 80_000).astype(float)
    exact = len(np.unique(values))
    s = spec((Aggregate("a", "approx_count_distinct", "v"),
              Aggregate("d", "count_distinct", "v")), size_us=100_000, lateness_us=100_000,
             slide_us=20_000, kind="sliding")
    batches = [events(list(range(80_000)), v=list(values)).iloc[i:i + 9_000]
               for i in range(0, 80_000, 9_000)]
    out = run(SlidingWindow(s), *batches)
    whole = out[out["window_start"] == 0].iloc[0]
    assert whole["d"] == exact
    assert abs(whole["a"] - exact) <= 4 * hll.RELATIVE_ERROR * exact
    # slices merged by the engine give the very estimate of the dense reference sketch
    assert whole["a"] == round(hll.registers_estimate(values))


def test_updates_mode_emits_early_rows_then_the_final_row():
    s = spec((Aggregate("n", "count", None), Aggregate("m", "median", "v", p=0.5)),
             emit="updates")
    op = TumblingWindow(s)
    assert op.output_schema.names == ["k", "window_start", "window_end", "n", "m", "final"]
    assert op.output_keys == ["k", "window_start", "final", "batch"]
    state = op.init()
    rows = []
    for i, batch in enumerate([events([1, 2], v=[1.0, 5.0]), events([5], v=[3.0]),
                               events([12], v=[7.0])]):
        result = op.step(state, batch)
        state = result.state
        rows += [(i, *r) for r in result.output[["window_start", "n", "m", "final"]].values]
    rows += [("end", *r) for r in op.finish(state)[["window_start", "n", "m", "final"]].values]
    assert rows == [(0, 0, 2, 3.0, False), (1, 0, 3, 3.0, False), (2, 0, 3, 3.0, True),
                    (2, 10, 1, 7.0, False), ("end", 10, 1, 7.0, True)]


def test_close_mode_output_schema_is_unchanged():
    op = SlidingWindow(spec((Aggregate("n", "count", None), Aggregate("s", "sum", "v")),
                            slide_us=5, kind="sliding"))
    assert op.output_schema.names == ["k", "window_start", "window_end", "n", "s"]
    assert op.output_keys == ["k", "window_start"]


def test_a_key_that_appears_late_in_the_recording_is_not_late():
    """Watermarks are per key: b's first event is on time although a is far ahead."""
    frame = events([1000, 2000, 5], k=["a", "a", "b"], v=[1.0, 2.0, 3.0])
    out, late, _, _ = run_batches(TumblingWindow(spec((Aggregate("n", "count", None),))),
                                  [frame])
    assert late.empty
    assert sorted(zip(out["k"], out["window_start"], strict=True)) == [("a", 1000), ("a", 2000),
                                                                       ("b", 0)]


def test_windows_without_events_emit_nothing_and_late_events_are_counted():
    s = spec((Aggregate("n", "count", None), Aggregate("m", "median", "v", p=0.5)),
             size_us=4, slide_us=2, lateness_us=1, kind="sliding")
    frame = events([0, 1, 30, 2, 31], v=[1.0, 2.0, 3.0, 4.0, 5.0])
    out, late, _, _ = run_batches(SlidingWindow(s), [frame.iloc[:3], frame.iloc[3:]])
    assert late[SEQ].tolist() == [3]  # t=2 after t=30 with lateness 1
    assert "below the key's watermark" in late["reason"].iloc[0]
    assert out["window_start"].tolist() == [-2, 0, 28, 30]
    assert int(out["n"].sum()) == 2 * (len(frame) - len(late))  # each event in 2 windows
    rows, ref_late = window_reference(frame, s)
    assert ref_late == [3] and [r["window_start"] for r in rows] == [-2, 0, 28, 30]


def window_doc(window: dict, lateness: str = "10s") -> dict:
    return {**query({"n": "count()"}), "lateness": lateness,
            "query": {"window": window, "aggregates": {"n": "count()"}}}


@pytest.mark.parametrize(("window", "lateness", "field", "message"), [
    ({"type": "count", "size": 2, "every": 3}, "10s", "query.window.every",
     "must be at most the size (2 events)"),
    ({"type": "sliding", "size": "1m", "slide": "2m"}, "10s", "query.window.slide",
     "must be at most the size (60000000 us)"),
    ({"type": "tumbling", "size": "99999999999999999999d"}, "10s", "query.window.size",
     "must be at most 36500d"),
    ({"type": "session", "gap": "36501d"}, "10s", "query.window.gap", "must be at most 36500d"),
    ({"type": "sliding", "size": "1d", "slide": "0s"}, "10s", "query.window.slide",
     "must be positive"),
    ({"type": "tumbling", "size": "1m"}, "99999999999999999999d", "lateness",
     "must be at most 36500d"),
    ({"type": "count", "size": 10**7}, "10s", "query.window.size", "at most 1,000,000"),
])
def test_window_shapes_out_of_bounds_are_errors_naming_the_file_and_the_field(
        window, lateness, field, message):
    with pytest.raises(CatalogError) as info:
        parse(window_doc(window, lateness))
    assert info.value.source == SOURCE and info.value.field == field
    assert message in info.value.problem


def test_the_largest_accepted_shapes_parse():
    assert parse(window_doc({"type": "tumbling", "size": "36500d"}, "36500d")).size_us == \
        36_500 * 86_400 * 10**6
    count = parse(window_doc({"type": "count", "size": 1_000_000, "every": 1_000_000}))
    assert (count.size_events, count.every_events) == (1_000_000, 1_000_000)


def test_a_spec_whose_slide_exceeds_its_size_cannot_be_built():
    with pytest.raises(ValueError, match="may not exceed its size"):
        spec((Aggregate("n", "count", None),), size_us=0, size_events=2, every_events=3,
             kind="count")


def test_first_and_last_skip_nulls():
    aggs = (Aggregate("f", "first", "v"), Aggregate("l", "last", "v"),
            Aggregate("fs", "first", "s"))
    out = run(TumblingWindow(spec(aggs)),
              events([0, 1, 2, 3], v=[np.nan, 2.0, 3.0, np.nan], s=[None, None, "x", None]))
    assert out[["f", "l", "fs"]].values.tolist() == [[2.0, 3.0, "x"]]


def test_a_udaf_over_an_all_null_window_is_null():
    s = spec((Aggregate("r", "rms", "v"),), udafs=(parse_udaf("rms", RMS),))
    out = run(TumblingWindow(s), events([0, 1, 12], v=[np.nan, np.nan, 3.0]))
    assert out["r"].isna().tolist() == [True, False]
    assert out["r"].iloc[1] == pytest.approx(3.0)


def test_count_distinct_counts_zero_and_negative_zero_as_one_value():
    s = spec((Aggregate("d", "count_distinct", "v"),))
    frame = events([0, 1, 2], v=[0.0, -0.0, 1.0])
    assert run(TumblingWindow(s), frame)["d"].tolist() == [2]
    assert [r["d"] for r in window_reference(frame, s)[0]] == [2]

"""The laws of a pipeline (a query over another query's output), in process: each stage's output
equals the composition of the stages' references over the raw events, and is the same for every
batch plan of the first stage (downstream batch b consumes upstream batch b's output). Random 2-
and 3-stage chains (window over select, window over window, QRE over window, select over QRE)
with generated ``where:`` conditions on any stage (:mod:`predicates`), generated lateness,
NULLs and events on window boundaries."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from predicates import conditions

from engine.catalog import parse_query, parse_recording
from engine.operator import SEQ, TIME
from engine.pipeline import StageRun, chain_reference, run_chain, stream_batch
from engine.specs import QuerySpec

EV = parse_recording({"name": "ev", "key": "k", "time": "ts",
                      "columns": {"k": "string", "ts": "timestamp", "v": "int", "x": "double"}})
RECORDINGS = {"ev": EV}
#: Columns numbering the stream a stage reads (they depend on how keys interleave in a batch).
NUMBERING = ("arrival_seq",)
#: ``where:`` conditions over the recording's numbers (``v`` in 0..7, ``x`` in [0, 1]), over a
#: window's rows (``n``, ``s``, ``hi`` of :func:`chains`' windows) and over a QRE's rows.
ON_EVENTS = conditions({"v": "int", "x": "double"}, {"v": [0, 7], "x": [0.0, 1.0]})
ON_WINDOWS = conditions({"n": "int", "s": "int", "hi": "double"},
                        {"n": [1, 3], "s": [0, 14], "hi": [0.0, 1.0]}, leaves=3)
ON_QRE = conditions({"value": "int"}, {"value": [0, 2]}, leaves=2)


def chain_of(docs: list[dict]) -> list[QuerySpec]:
    """The queries of ``docs``, each reading the one before (the first reads ``ev``)."""
    chain: list[QuerySpec] = []
    for doc in docs:
        upstream = {q.name: q for q in chain}
        chain.append(parse_query(doc, RECORDINGS, f"{doc['name']}.yaml", upstream.get))
    return chain


def select(name: str, source: object, where: str | None, columns: list[str]) -> dict:
    return {"name": name, "kind": "select", "input": source, "query": {"columns": columns},
            **({"where": where} if where else {})}


def window(name: str, source: object, size: int, lateness: int, aggregates: dict,
           where: str | None = None) -> dict:
    return {"name": name, "kind": "window", "input": source, "lateness": f"{lateness}us",
            "query": {"window": {"type": "tumbling", "size": f"{size}us"},
                      "aggregates": aggregates}, **({"where": where} if where else {})}


def qre(name: str, source: object, threshold: int, output: str, lateness: int,
        where: str | None = None) -> dict:
    return {"name": name, "kind": "qre", "input": source, "output": output,
            "lateness": f"{lateness}us",
            "query": f"iter(eps(0), atom(n > {threshold}, 1) | atom(n <= {threshold}, 0), +)",
            **({"where": where} if where else {})}


def latenesses(size: int) -> st.SearchStrategy[int]:
    """Lateness in µs: none, on and next to the window size, or any up to four windows."""
    return st.one_of(st.sampled_from([0, size - 1, size, size + 1]), st.integers(0, 4 * size))


@st.composite
def chains(draw: st.DrawFn) -> list[QuerySpec]:
    """A random 2- or 3-stage chain of one of the shapes the module docstring lists."""
    shape = draw(st.sampled_from(["window/select", "window/window", "qre/window",
                                  "select/qre/window", "window/window/select"]))
    size = draw(st.sampled_from([5, 10, 20]))
    lateness = draw(latenesses(size))
    where = draw(st.none() | ON_EVENTS)
    aggregates = {"n": "count()", "s": "sum(v)", "hi": "max(x)"}
    sel = select("sel", "ev", where, ["k", "ts", "v", "x"])
    win = window("win", "ev", size, lateness, aggregates, draw(st.none() | ON_EVENTS))
    docs = {
        "window/select": [sel, window("win", {"query": "sel"}, size, lateness, aggregates)],
        "window/window": [win, window("win2", {"query": "win"}, size * draw(
            st.sampled_from([2, 3])), draw(latenesses(size)),
            {"n": "count()", "top": "max(hi)", "total": "sum(s)"},
            draw(st.none() | ON_WINDOWS))],
        "qre/window": [win, qre("q", {"query": "win"}, draw(st.integers(0, 3)),
                                draw(st.sampled_from(["every", "changes"])),
                                draw(latenesses(size)), draw(st.none() | ON_WINDOWS))],
        "select/qre/window": [win, qre("q", {"query": "win"}, 1, "every", 0),
                              select("sel2", {"query": "q"}, draw(st.none() | ON_QRE),
                                     ["k", "event_time", "value"])],
        "window/window/select": [sel, window("win", {"query": "sel"}, size, lateness,
                                             aggregates),
                                 window("win2", {"query": "win"}, size * 2, 0,
                                        {"n": "count()", "top": "max(hi)"})],
    }[shape]
    return chain_of(docs)


@st.composite
def recordings(draw: st.DrawFn) -> pd.DataFrame:
    """Events of a few keys, out of order, on and around window boundaries, with NULL keys,
    times and values."""
    n = draw(st.integers(0, 60))
    keys = draw(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=n, max_size=n))
    base = np.arange(n, dtype="int64") * draw(st.sampled_from([1, 2, 5]))
    jitter = draw(st.lists(st.integers(-12, 12), min_size=n, max_size=n))
    times = [max(0, int(b) + j) for b, j in zip(base, jitter, strict=True)]
    no_time = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    values = draw(st.lists(st.one_of(st.none(), st.integers(0, 7)), min_size=n, max_size=n))
    xs = draw(st.lists(st.one_of(st.none(), st.floats(0, 1, allow_nan=False)), min_size=n,
                       max_size=n))
    t = pd.array([None if gone and i % 7 == 0 else v for i, (v, gone)
                  in enumerate(zip(times, no_time, strict=True))], dtype="Int64")
    return pd.DataFrame({
        "k": pd.Series(keys, dtype=object),
        "ts": pd.to_datetime(t, unit="us", utc=True).as_unit("us"),
        "v": pd.array(values, dtype="Int64"), "x": pd.Series(xs, dtype="float64"),
        TIME: t, SEQ: np.arange(n, dtype="int64")})


def cut(events: pd.DataFrame, points: list[int]) -> list[pd.DataFrame]:
    bounds = [0, *sorted(p % (len(events) + 1) for p in points), len(events)]
    return [events.iloc[a:b] for a, b in itertools.pairwise(bounds)]


def rows(frame: pd.DataFrame, drop: tuple[str, ...] = ()) -> list[tuple]:
    """``frame``'s rows as a sorted list: nulls as None, timestamps as microseconds, doubles
    rounded (the declared tolerance), ``drop``'s columns left out."""
    frame = frame.drop(columns=[c for c in drop if c in frame])
    out = []
    for record in frame.to_dict("records"):
        values = []
        for column in sorted(record):
            value = record[column]
            if value is None or (not isinstance(value, str) and pd.isna(value)):
                value = None
            elif isinstance(value, pd.Timestamp):
                value = value.value // 1_000
            elif isinstance(value, float | np.floating):
                value = round(float(value), 9) if math.isfinite(value) else value
            elif isinstance(value, np.integer):
                value = int(value)
            values.append((column, value))
        out.append(tuple(values))
    return sorted(out, key=repr)


def outputs(runs: list[StageRun]) -> list[list[tuple]]:
    return [rows(run.output, NUMBERING if i else ()) for i, run in enumerate(runs)]


@settings(max_examples=60, deadline=None)
@given(chains(), recordings(), st.lists(st.integers(0, 60), max_size=6),
       st.lists(st.integers(0, 60), max_size=6))
def test_each_stage_equals_the_composed_reference_under_any_batch_plan(chain, events, cuts,
                                                                       other):
    runs = run_chain(chain, RECORDINGS, cut(events, cuts))
    reference = chain_reference(chain, RECORDINGS, events)
    for i, (run, ref) in enumerate(zip(runs, reference, strict=True)):
        drop = NUMBERING if i else ()
        assert rows(run.output, drop) == rows(ref, drop), chain[i].name
    assert outputs(run_chain(chain, RECORDINGS, cut(events, other))) == outputs(runs)


@settings(max_examples=30, deadline=None)
@given(chains(), recordings(), st.lists(st.integers(0, 60), max_size=6))
def test_stage_batch_b_reads_upstream_batch_b_output(chain, events, cuts):
    """Downstream batch b reads exactly upstream batch b's rows (the end-of-input rows are its
    last batch), numbered on from the rows of the batches before."""
    batches = cut(events, cuts)
    runs = run_chain(chain, RECORDINGS, batches)
    assert runs[0].rows_in == [len(b) for b in batches]
    for upstream, downstream, query in zip(runs, runs[1:], chain[1:], strict=False):
        assert downstream.rows_in == [len(rows) for rows in upstream.outputs]
        assert len(downstream.outputs) == len(upstream.outputs) + 1
        seq = 0
        for rows_out in upstream.outputs:
            batch = stream_batch(rows_out, query, seq)
            assert batch[SEQ].tolist() == list(range(seq, seq + len(rows_out)))
            seq += len(rows_out)


def test_a_select_stage_keeps_the_arrival_order_of_the_recording():
    """Window over select: the select's rows reach the window in the recording's arrival order
    whatever the batch plan, so even the window's late events are the same."""
    chain = chain_of([select("sel", "ev", "v > 0", ["k", "ts", "v"]),
                      window("win", {"query": "sel"}, 10, 0, {"n": "count()"})])
    t = [5, 30, 12, 41, 3, 44]
    events = pd.DataFrame({"k": ["a"] * 6, "ts": pd.to_datetime(t, unit="us", utc=True),
                           "v": pd.array([1, 1, 1, 0, 1, 1], dtype="Int64"),
                           "x": [0.0] * 6, TIME: np.array(t, dtype="int64"),
                           SEQ: np.arange(6, dtype="int64")})
    for points in ([], [1, 2, 3, 4, 5], [3]):
        runs = run_chain(chain, RECORDINGS, cut(events, points))
        assert sorted(runs[1].late) == [2, 3]  # t=12 and t=3 arrive after t=30
        assert [int(n) for n in runs[1].output["n"]] == [1, 1, 1]

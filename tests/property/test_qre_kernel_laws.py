"""The numba kernel against the interpreters on random strongly typed queries (the generators
of test_qre_engines): the same output and the same state bytes after every prefix, and batch
boundaries (states carried as bytes between calls) change nothing."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_qre_engines import QUERIES, streams

from engine.operator import SEQ, TIME
from engine.qre import CompiledEvaluator, evaluate, run, strongly_typed
from engine.qre.compiled import explore
from engine.qre.kernel import Kernel, compile_kernel
from engine.qre.keyed import QreOperator
from engine.qre.query_spec import QreSpec

SETTINGS = {"deadline": None, "derandomize": True,
            "suppress_health_check": [HealthCheck.filter_too_much, HealthCheck.too_slow]}
DTYPES = {"i": np.int64, "f": np.float64}
FLOATS = [0.0, -0.0, 0.5, 1.0, 1.5, 2.0, 3.0, -2.5]


def kernel_of(query, kinds=None) -> Kernel:
    kernel = compile_kernel(query, kinds)
    assert isinstance(kernel, Kernel), kernel
    return kernel


def columns(kernel: Kernel, items: list[dict]) -> dict[str, np.ndarray]:
    return {f: np.array([item[f] for item in items], dtype=DTYPES[kind])
            for f, kind in zip(kernel.fields, kernel.kinds, strict=True)}


def check_every_prefix(query, kernel: Kernel, stream: list[dict]) -> None:
    """Outputs equal the interpreters'; the state after each prefix (one key per prefix, one
    call) has the compiled interpreter's bytes and output; ``same`` flags equal JSON values in a
    row."""
    expected = evaluate(query, stream)
    assert run(CompiledEvaluator(), query, stream) == expected
    assert kernel.evaluate(stream) == expected
    prefixes = [item for n in range(len(stream) + 1) for item in stream[:n]]
    bounds = np.cumsum([0, *range(len(stream) + 1)])
    result = kernel.run(columns(kernel, prefixes), bounds, kernel.initial(len(bounds) - 1),
                        "final")
    assert (result.failed == -1).all()
    automaton = explore(query)
    state = automaton.start()
    for n in range(len(stream) + 1):
        state = state.step(stream[n - 1]) if n else state
        assert kernel.dump(result.states, n) == automaton.dump(state)
        assert kernel.interpreter_state(result.states, n).output() == expected[n]
    single = kernel.run(columns(kernel, stream), np.array([0, len(stream)]), kernel.initial(1))
    previous = None
    for i, outcome in enumerate(expected[1:]):
        if outcome.kind == "value":
            text = json.dumps(outcome.value, default=str)
            assert single.same[i] == (text == previous)
            previous = text


@settings(max_examples=150, **SETTINGS)
@given(QUERIES, streams(10))
def test_kernel_equals_interpreters_on_every_prefix(query, stream):
    assume(strongly_typed(query)[0])
    check_every_prefix(query, kernel_of(query), stream)


@settings(max_examples=40, **SETTINGS)
@given(QUERIES, st.lists(st.sampled_from(FLOATS).map(lambda v: {"x": v}), min_size=3,
                         max_size=10))
def test_kernel_equals_interpreters_on_floats(query, stream):
    assume(strongly_typed(query)[0])
    kernel = compile_kernel(query, {"x": "float"})
    if isinstance(kernel, str):  # only max / min of an int and a float are refused
        assert "depends on the values" in kernel
        return
    check_every_prefix(query, kernel, stream)


@settings(max_examples=60, **SETTINGS)
@given(QUERIES, st.lists(streams(12), min_size=1, max_size=3),
       st.lists(st.integers(0, 12), max_size=4))
def test_batches_do_not_change_the_kernel(query, keyed, cuts):
    assume(strongly_typed(query)[0])
    kernel = kernel_of(query)
    whole = kernel.run(*flat(kernel, keyed), kernel.initial(len(keyed)))
    expected = [[kernel.outcome(whole, i) for i in range(lo, hi)]
                for lo, hi in itertools.pairwise(flat(kernel, keyed)[1])]
    blobs, got = [None] * len(keyed), [[] for _ in keyed]
    for lo, hi in itertools.pairwise([0, *sorted(cuts), 12]):
        states, ok = kernel.load(blobs)
        assert ok.all()
        cols, bounds = flat(kernel, [stream[lo:hi] for stream in keyed])
        result = kernel.run(cols, bounds, states)
        for k, (a, b) in enumerate(itertools.pairwise(bounds)):
            got[k] += [kernel.outcome(result, i) for i in range(a, b)]
        blobs = [kernel.dump(result.states, k) for k in range(len(keyed))]
    assert got == expected
    assert blobs == [kernel.dump(whole.states, k) for k in range(len(keyed))]


@settings(max_examples=60, **SETTINGS)
@given(QUERIES, st.lists(streams(12), min_size=1, max_size=3))
def test_states_loaded_from_the_last_dumps_equal_decoded_ones(query, keyed):
    """The blobs of a kernel's last ``dumps`` are not decoded when loaded again: the states
    taken from it equal those decoded from the bytes."""
    assume(strongly_typed(query)[0])
    kernel = kernel_of(query)
    result = kernel.run(*flat(kernel, keyed), kernel.initial(len(keyed)))
    blobs = kernel.dumps(result.states)
    assert set(kernel.state_bytes.recent["last"][0]) == set(map(id, blobs))
    remembered, ok = kernel.load([None, *blobs])
    kernel.state_bytes.recent.clear()
    decoded, decoded_ok = kernel.load([None, *blobs])
    assert ok.all() and decoded_ok.all()
    for name in ("state", "ints", "floats"):
        assert getattr(remembered, name).tobytes() == getattr(decoded, name).tobytes()
    assert kernel.dumps(remembered)[1:] == blobs


def flat(kernel: Kernel, keyed: list[list[dict]]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Key-sorted columns and key boundaries of per-key streams."""
    return (columns(kernel, [item for stream in keyed for item in stream]),
            np.cumsum([0, *map(len, keyed)]))


@settings(max_examples=30, **SETTINGS)
@given(QUERIES, st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 3)), max_size=25),
       st.lists(st.integers(0, 25), max_size=3), st.sampled_from(["every", "changes", "final"]))
def test_operator_on_the_kernel_equals_the_interpreter(query, events, cuts, output):
    """QreOperator with and without the kernel: same outputs, same state bytes."""
    assume(strongly_typed(query)[0])
    frame = pd.DataFrame({"k": [k for k, _ in events], TIME: np.arange(len(events)) * 10,
                          SEQ: np.arange(len(events)), "x": [x for _, x in events]})
    spec = QreSpec(key="k", key_type="string", lateness_us=15, text=str(query), output=output,
                   timestamp_columns=(), fields=("k", "x"))
    fast, slow = QreOperator(spec), QreOperator(spec, use_kernel=False)
    results = []
    for op in (fast, slow):
        state, outputs = op.init(), []
        for lo, hi in itertools.pairwise([0, *sorted(cuts), len(events)]):
            step = op.step(state, frame.iloc[lo:hi])
            state = step.state
            outputs.append(step.output)
        outputs.append(op.finish(state))
        rows = [o for o in outputs if not o.empty] or outputs[-1:]
        results.append((pd.concat(rows, ignore_index=True), op.state_codec.canon(state)))
    (out_fast, state_fast), (out_slow, state_slow) = results
    pd.testing.assert_frame_equal(out_fast, out_slow)
    pd.testing.assert_frame_equal(state_fast, state_slow)

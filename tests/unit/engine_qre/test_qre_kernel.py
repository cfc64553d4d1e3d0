"""The numba kernel: which queries it accepts (and why it refuses the others), Python's exact
arithmetic, the steps it hands back to the interpreter, canonical states, and the keyed operator
on the kernel path."""

from __future__ import annotations

import math
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from test_qre_examples import CASES

from engine.operator import SEQ, TIME, run_batches
from engine.qre import CompiledEvaluator, atom, evaluate, iterate, parse, run
from engine.qre.compiled import explore
from engine.qre.dispatch import RunEvaluator
from engine.qre.kernel import Kernel, compile_kernel, kernel_for, kernel_reason
from engine.qre.keyed import QreOperator
from engine.qre.query_spec import QreSpec
from engine.qre.stream_reference import qre_reference

QUERIES = Path(__file__).resolve().parents[3] / "schemas" / "queries"
EPISODES = yaml.safe_load((QUERIES / "vitals_episode_max_avg.yaml").read_text())["query"]


def heart_rates(n: int, seed: int) -> list[int]:
    """Resting rates with runs above 100 (episodes)."""
    rng = np.random.default_rng(seed)
    rates = rng.integers(60, 99, n)
    for start in rng.integers(0, n, n // 40):
        rates[start:start + rng.integers(3, 20)] = rng.integers(101, 160)
    return rates.tolist()


@pytest.mark.parametrize("name", ["vitals_episode_max_avg", "vitals_tachy_count"])
def test_the_vitals_qre_queries_run_on_the_kernel(name):
    text = yaml.safe_load((QUERIES / f"{name}.yaml").read_text())["query"]
    kernel = kernel_for(text, {"heart_rate": "int"})
    assert isinstance(kernel, Kernel)
    items = [{"heart_rate": v} for v in heart_rates(3000, seed=1)]
    expected = evaluate(parse(text), items)
    assert kernel.evaluate(items) == expected
    assert sum(o.kind == "value" for o in expected) > 2000


STRONG = [case for case in CASES if case[4]]


@pytest.mark.parametrize(("name", "queries", "stream", "expected", "strong"), STRONG,
                         ids=[c[0] for c in STRONG])
def test_strongly_typed_paper_examples_run_on_the_kernel(name, queries, stream, expected,
                                                         strong):
    text_form = queries[1]
    kernel = kernel_for(text_form)
    assert kernel is not None, kernel_reason(text_form)
    assert kernel.evaluate(stream) == expected


@pytest.mark.parametrize("name", ["T1", "T9", "T10"])
def test_examples_built_with_python_callables_are_refused(name):
    api_form = next(c[1][0] for c in CASES if c[0] == name)
    assert "Python callable" in kernel_reason(api_form)


@pytest.mark.parametrize("name", [c[0] for c in CASES if not c[4]])
def test_examples_that_are_not_strongly_typed_are_refused(name):
    text_form = next(c[1][1] for c in CASES if c[0] == name)
    assert kernel_for(text_form) is None
    assert kernel_reason(text_form).startswith("the query is not strongly typed: ")


@pytest.mark.parametrize(("text", "kinds", "reason"), [
    ("iter(eps(0), atom(v > 20, v) | atom(v > 60, 1), +)", None, "not strongly typed"),
    (yaml.safe_load((QUERIES / "ads_view_count.yaml").read_text())["query"],
     {"event_type": "string"}, "field 'event_type' is not a number or bool"),
    ("iter(eps(0), atom(event_type == 'view', 1) | atom(event_type != 'view', 0), +)", None,
     "the value 'view' is not a number"),
    ("atom(true, 'a')", None, "the value 'a' is not a number"),
    ("iter(eps(0), atom(true, x), max)", {"x": "float"},
     "max of int and float values: the type of the result depends on the values"),
    ("atom(true, (x, x) < (x, x))", None, "comparison needs numbers, not (int, int) values"),
])
def test_queries_without_a_kernel_say_why(text, kinds, reason):
    assert compile_kernel(text, kinds) == compile_kernel(text, kinds)
    assert reason in kernel_reason(text, kinds)
    assert kernel_for(text, kinds) is None


def test_callable_predicates_are_refused():
    query = iterate(atom(lambda d: d["x"] > 1, "x"), atom("true", "x"), "+")
    assert "is a Python callable, opaque to the kernel" in kernel_reason(query)


def test_kernels_are_memoised_per_query_text_and_field_kinds():
    text = "iter(eps(0), atom(true, x), +)"
    assert kernel_for(text) is kernel_for(parse(text)) is kernel_for(text, {"x": "int"})
    assert kernel_for(text, {"x": "float"}) is not kernel_for(text)
    assert kernel_for(text, {"x": "float"}).kinds == ("f",)


@pytest.mark.parametrize(("kind", "values"), [
    ("int", [-7, -1, 0, 3, 10, 2**52]),
    ("float", [-7.5, -0.0, 0.0, 2.5, 1e308, math.inf, -math.inf, math.nan]),
    ("bool", [True, False]),
])
def test_arithmetic_is_pythons(kind, values):
    text = ("apply(atom(true, (x // 3, x % -3, -x, abs(x), x / 2, x * 2 - 1, x == 3, "
            "x < 2.5, min(x + 0, x + x), not x, x and true, -(x % 2))), id)")
    kernel = kernel_for(text, {"x": kind})
    items = [{"x": v} for v in values]
    assert [repr(o) for o in kernel.evaluate(items)] == [repr(o) for o in evaluate(parse(text),
                                                                                   items)]


@pytest.mark.parametrize(("text", "values", "stop"), [
    ("iter(eps(1), atom(true, x), *)", [2**40, 2**40], 1),  # int64 overflow
    ("iter(eps(0), atom(true, x), +)", [2**62, 2**62, 1], 1),
    ("apply(atom(true, x), v -> 1 / v)", [0], 0),  # Python raises ZeroDivisionError
    ("apply(atom(true, x), v -> v / 3)", [2**53 + 1], 0),  # not exact as a float
    ("atom(x > 1, 1) | atom(x <= 1, 2)", [math.nan], 0),  # neither predicate: "impossible"
])
def test_steps_the_kernel_cannot_reproduce_go_back_to_the_interpreter(text, values, stop):
    kind = "float" if isinstance(values[0], float) else "int"
    kernel = kernel_for(text, {"x": kind})
    column = np.array(values, dtype=np.float64 if kind == "float" else np.int64)
    result = kernel.run({"x": column}, np.array([0, len(values)]), kernel.initial(1))
    assert result.failed.tolist() == [stop]
    with pytest.raises(ValueError, match=f"item {stop} needs the interpreter"):
        kernel.evaluate([{"x": v} for v in values])


def test_states_are_canonical_bytes_shared_with_the_interpreter():
    query = parse(EPISODES)
    kernel = kernel_for(query, {"heart_rate": "int"})
    automaton = explore(query)
    items = [{"heart_rate": v} for v in heart_rates(500, seed=2)]
    state = CompiledEvaluator().start(query)
    blobs = []
    for item in items:
        state = state.step(item)
        blobs.append(automaton.dump(state))
    column = np.array([item["heart_rate"] for item in items])
    prefixes = np.arange(len(items) + 1)
    for n in (1, 17, 250, 500):
        result = kernel.run({"heart_rate": column}, prefixes[[0, n]], kernel.initial(1), "final")
        assert kernel.dump(result.states, 0) == blobs[n - 1]
        loaded, ok = kernel.load([blobs[n - 1]])
        assert ok.all() and kernel.dump(loaded, 0) == blobs[n - 1]
        assert automaton.load(blobs[n - 1]).output() == run(CompiledEvaluator(), query,
                                                            items[:n])[-1]
    assert max(map(len, blobs)) <= 32


def test_a_state_of_other_value_types_is_not_loaded():
    text = "iter(eps(0), atom(true, x), +)"
    floats, ints = kernel_for(text, {"x": "float"}), kernel_for(text)
    result = floats.run({"x": np.array([0.5])}, np.array([0, 1]), floats.initial(1))
    _, ok = ints.load([floats.dump(result.states, 0), None])
    assert ok.tolist() == [False, True]


def spec(text: str, output: str) -> QreSpec:
    return QreSpec(key="k", key_type="string", lateness_us=10, text=text, output=output,
                   timestamp_columns=(), fields=("k", "heart_rate"))


def vitals_events(n: int, keys: int) -> pd.DataFrame:
    rates = heart_rates(n, seed=3)
    return pd.DataFrame({"k": [f"p{i % keys}" for i in range(n)],
                         TIME: np.arange(n, dtype=np.int64) // keys * 5,
                         SEQ: np.arange(n, dtype=np.int64),
                         "heart_rate": pd.Series(rates, dtype=object)})


@pytest.mark.parametrize("output", ["every", "changes", "final"])
def test_the_operator_uses_the_kernel_with_identical_results_and_states(output, monkeypatch):
    events = vitals_events(6000, keys=7)
    batches = [events.iloc[a:b] for a, b in [(0, 1000), (1000, 1001), (1001, 4500),
                                             (4500, 6000)]]
    fast = QreOperator(spec(EPISODES, output))
    calls = []
    original = RunEvaluator.kernel_runs
    monkeypatch.setattr(RunEvaluator, "kernel_runs",
                        lambda self, runs: calls.append(len(runs)) or original(self, runs))
    out_fast, _, state_fast, digests_fast = run_batches(fast, batches)
    assert sum(calls) > 0
    out_slow, _, _, digests_slow = run_batches(
        QreOperator(spec(EPISODES, output), use_kernel=False), batches)
    pd.testing.assert_frame_equal(out_fast, out_slow)
    assert digests_fast == digests_slow
    reference, _, _ = qre_reference(events, spec(EPISODES, output))
    assert sorted(out_fast["value_json"]) == sorted(reference["value_json"])
    assert state_fast["evaluator"].map(len).max() <= 32  # canonical bytes, not a pickle


def test_values_of_other_types_or_states_fall_back_to_the_interpreter(monkeypatch):
    """A float state (as an int column with nulls gives) cannot load into the int kernel, and a
    run mixing ints and floats has no kernel: those keys continue on the interpreter."""
    text = "iter(eps(0), atom(true, heart_rate), +)"
    events = pd.DataFrame({"k": ["a", "b", "a", "b", "a"], TIME: [0, 0, 20, 5, 40],
                           SEQ: range(5), "heart_rate": pd.Series([1.5, 2, 3, 2.5, 4],
                                                                  dtype=object)})
    op = QreOperator(spec(text, "every"))
    interpreted = []
    original = RunEvaluator.interpret
    monkeypatch.setattr(RunEvaluator, "interpret", lambda self, run: interpreted.append(
        (run.key, len(run.ready))) or original(self, run))
    out, _, _, _ = run_batches(op, [events.iloc[:3], events.iloc[3:]])
    reference, _, _ = qre_reference(events, spec(text, "every"))
    assert out["value_json"].tolist() == reference["value_json"].tolist() == [
        "1.5", "4.5", "8.5", "2", "4.5"]
    assert sorted(interpreted) == [("a", 1), ("a", 1), ("b", 2)]


def test_the_operator_pickles_without_its_compiled_code():
    op = QreOperator(spec(EPISODES, "changes"))
    op.step(op.init(), vitals_events(50, keys=2))
    copy = pickle.loads(pickle.dumps(op))
    assert copy.spec == op.spec and copy.runs.automaton is not None

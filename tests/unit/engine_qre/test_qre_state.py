"""The incremental interface: bounded state on long streams, batch-boundary invariance."""

from __future__ import annotations

import pickle
import random

import pytest

from engine.qre import (
    CompiledEvaluator,
    DerivativeEvaluator,
    HierarchicalEvaluator,
    Outcome,
    atom,
    eps,
    evaluate,
    iterate,
    parse,
    reference_poly,
    run,
    split,
    strongly_typed,
)

EPISODES = """
let hi_id = atom(x > 10, x) in
let lo_u = atom(x <= 10, unit) in
let hi_u = atom(x > 10, unit) in
let block = split(iter(hi_id, hi_id, max), iter(lo_u, lo_u, pi1), pi1) in
let blocks = iter(apply(block, m -> (m, 1)), block, (p, m) -> (p[0] + m, p[1] + 1)) in
let lead = iter(eps(unit), lo_u, pi1) in
let trail = iter(eps(unit), hi_u, pi1) in
apply(split(split(lead, blocks, pi2), trail, pi1), p -> p[0] / p[1])
"""
LAST_TWO = """
let f = atom(true, x) in
let g = iter(eps(0), atom(true, 0), pi2) in
combine(split(g, split(f, f, max), pi2), split(g, split(f, f, min), pi2), avg)
"""
ODD_PAIR = """
split(iter(eps(0), atom(x % 2 == 0, x) | atom(x % 2 == 1, x), +),
      split(atom(x % 2 == 1, x), atom(x % 2 == 1, x), +), max)
"""


def _stream(n: int, seed: int) -> list[dict[str, int]]:
    rng = random.Random(seed)
    return [{"x": rng.randint(0, 20)} for _ in range(n)]


@pytest.mark.parametrize(("text", "n"), [(EPISODES, 100_000), (LAST_TWO, 20_000),
                                         (ODD_PAIR, 20_000)], ids=["T10", "T9", "T6"])
def test_hierarchical_state_is_bounded_by_query_size(text, n):
    query = parse(text)
    assert strongly_typed(query)[0]
    bound = query.size ** 2  # Lemma 12
    state = HierarchicalEvaluator().start(query)
    sizes = []
    for item in _stream(n, seed=n):
        state = state.step(item)
        sizes.append(state.size())
    assert max(sizes) <= bound
    assert max(sizes[n // 2:]) <= max(sizes[:1000])  # flat: no growth after warm-up


@pytest.mark.parametrize("text", [EPISODES, LAST_TWO, ODD_PAIR], ids=["T10", "T9", "T6"])
def test_compiled_automaton_stays_small_and_agrees(text):
    query = parse(text)
    stream = _stream(100_000, seed=7)
    state, outputs = CompiledEvaluator().start(query), []
    registers = 0
    for item in stream:
        state = state.step(item)
        registers = max(registers, state.size())
        outputs.append(state.output())
    assert registers <= query.size ** 2
    assert len(state.machine.shapes) <= query.size ** 2  # finitely many shapes, all seen early
    check = HierarchicalEvaluator().start(query)
    for item, output in zip(stream[:3000], outputs, strict=False):
        check = check.step(item)
        assert check.output() == output


def test_antimirov_state_stays_pruned_on_ambiguous_queries():
    all_sums = iterate(eps(0), atom("true", "x") | atom("true", "0"), "+")
    state = DerivativeEvaluator.start(all_sums)
    for item in _stream(2_000, seed=1):
        state = state.step(item)
        assert len(state.queries) <= 2
    assert state.output() == Outcome("ambiguous")


@pytest.mark.parametrize("batch", [1, 2, 3, 7, 50])
def test_batch_boundaries_and_snapshots_do_not_change_outputs(batch):
    query = parse(EPISODES)
    stream = _stream(50, seed=3)
    expected = reference_poly(query, stream)
    for engine in (DerivativeEvaluator(), HierarchicalEvaluator(), CompiledEvaluator()):
        state, outputs = engine.start(query), []
        outputs.append(state.output())
        for start in range(0, len(stream), batch):
            state = pickle.loads(pickle.dumps(state))  # carried between micro-batches
            for item in stream[start:start + batch]:
                state = state.step(item)
                outputs.append(state.output())
        assert outputs == expected


def test_states_are_immutable_values():
    query = split(atom("true", "x"), atom("true", "x"), "+")
    start = DerivativeEvaluator.start(query)
    after = start.step({"x": 1})
    assert start.output() == Outcome("none") and after.output() == Outcome("none")
    assert after.step({"x": 2}).output() == Outcome("value", 3)
    assert start.step({"x": 5}).step({"x": 5}).output() == Outcome("value", 10)
    assert run(DerivativeEvaluator(), query, [{"x": 1}, {"x": 2}]) == evaluate(
        query, [{"x": 1}, {"x": 2}])


def test_derivative_state_moves_between_processes():
    """Rate keys are interned per process: a state pickled elsewhere must still prune right."""
    import subprocess
    import sys

    stream = [{"x": v} for v in (1, 2, 3, 4, 5, 6)]
    script = (
        "import pickle, sys\n"
        "from engine.qre import parse, DerivativeEvaluator\n"
        "from engine.qre.terms import intern_rate\n"
        "for i in range(100_000): intern_rate(('pred', f'dummy{i}'))\n"
        f"q = parse({AMBIGUOUS_SUMS!r})\n"
        "s = DerivativeEvaluator.start(q)\n"
        f"for v in (1, 2, 3): s = s.step({{'x': v}})\n"
        "sys.stdout.buffer.write(pickle.dumps(s))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, check=True)
    state = pickle.loads(out.stdout)
    stack = list(state.queries)
    while stack:  # every rate id refers to this process's table
        node = stack.pop()
        assert node.rate == node._rate()
        stack.extend(node.children())
    outputs = []
    for item in stream[3:]:
        state = state.step(item)
        outputs.append(state.output())
        assert len(state.queries) <= 3
    assert outputs == evaluate(parse(AMBIGUOUS_SUMS), stream)[4:]


AMBIGUOUS_SUMS = ("split(iter(eps(unit), atom(true, unit), pi1), "
                  "iter(eps(0), atom(x > 2, x), +), pi2)")

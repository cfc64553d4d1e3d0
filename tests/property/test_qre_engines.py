"""Random well-formed QREs on random short streams: every engine agrees with the literal
multiset reference on every prefix, ambiguity included."""

from __future__ import annotations

import pickle

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from engine.qre import (
    CompiledEvaluator,
    DerivativeEvaluator,
    HierarchicalEvaluator,
    apply,
    atom,
    bottom,
    choice,
    combine,
    eps,
    evaluate,
    iterate,
    parse,
    reference,
    reference_poly,
    run,
    split,
    strongly_typed,
)

PREDS = ["true", "true", "true", "x % 2 == 0", "x % 2 == 1", "x > 1", "x <= 1", "x == 0 or x == 3"]
ITEM_OPS = ["x", "1", "x * 2", "0"]
BIN_OPS = ["+", "max", "min", "pi1", "pi2", "(a, b) -> a * 2 - b"]
UN_OPS = ["id", "v -> v + 1", "v -> -v"]


def _iterate(init, body, op):
    """Iteration whose body is made non-nullable by appending one item when needed."""
    if body.outs:
        body = split(body, atom("true", "x"), "+")
    return iterate(init, body, op)


ATOMS = st.builds(atom, st.sampled_from(PREDS), st.sampled_from(ITEM_OPS))
LEAVES = st.one_of(ATOMS, ATOMS, ATOMS, ATOMS, st.builds(eps, st.integers(0, 2)), st.just(bottom()))


@st.composite
def queries(draw, depth: int = 3):
    """A random well-typed query: nested constructors down to ``depth``, then leaves."""
    kind = draw(st.integers(0, 6)) if depth else 0
    if kind == 0:
        return draw(LEAVES)
    left = draw(queries(depth - 1))
    if kind == 1:
        return apply(left, draw(st.sampled_from(UN_OPS)))
    right = draw(queries(depth - 1))
    if kind == 2:
        return choice(left, right)
    op = draw(st.sampled_from(BIN_OPS))
    if kind == 3:
        return split(left, right, op)
    if kind == 4:
        return combine(left, right, op)
    return _iterate(left, right, op)


QUERIES = queries()


def streams(max_size: int):
    return st.lists(st.integers(0, 3).map(lambda v: {"x": v}), min_size=max_size // 2,
                    max_size=max_size)


@settings(max_examples=1000, deadline=None)
@given(QUERIES, streams(5))
def test_derivative_engine_matches_literal_reference(query, stream):
    assert evaluate(query, stream) == reference(query, stream)


@settings(max_examples=600, deadline=None)
@given(QUERIES, streams(5))
def test_poly_reference_matches_literal_reference(query, stream):
    assert reference_poly(query, stream) == reference(query, stream)


@settings(max_examples=400, deadline=None)
@given(QUERIES, streams(12))
def test_derivative_engine_matches_poly_reference_on_longer_streams(query, stream):
    assert evaluate(query, stream) == reference_poly(query, stream)


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(QUERIES, streams(10))
def test_hierarchical_and_compiled_match_derivative_on_strongly_typed(query, stream):
    assume(strongly_typed(query)[0])
    expected = evaluate(query, stream)
    assert run(HierarchicalEvaluator(), query, stream) == expected
    assert run(CompiledEvaluator(), query, stream) == expected
    assert expected == reference_poly(query, stream)
    assert all(o.kind != "ambiguous" for o in expected)  # Lemma 11


@settings(max_examples=200, deadline=None)
@given(QUERIES, streams(8), st.integers(0, 8))
def test_state_survives_pickling_between_batches(query, stream, cut):
    state = DerivativeEvaluator.start(query)
    for item in stream[:cut]:
        state = state.step(item)
    state = pickle.loads(pickle.dumps(state))
    outputs = [state.output()]
    for item in stream[cut:]:
        state = state.step(item)
        outputs.append(state.output())
    assert outputs == evaluate(query, stream)[min(cut, len(stream)):]


@settings(max_examples=300, deadline=None)
@given(QUERIES, streams(5))
def test_text_rendering_parses_back_to_an_equivalent_query(query, stream):
    assert evaluate(parse(str(query)), stream) == evaluate(query, stream)

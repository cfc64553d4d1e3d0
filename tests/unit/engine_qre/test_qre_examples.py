"""Every example of the paper and of design/qre.md §6 (T1-T10), through the Python API and the
textual syntax, on all engines. Expected values are the hand-computed ones of the design note."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest

from engine.qre import (
    UNIT,
    DerivativeEvaluator,
    HierarchicalEvaluator,
    Outcome,
    apply,
    atom,
    combine,
    eps,
    evaluate,
    iterate,
    parse,
    reference,
    reference_multiset,
    reference_poly,
    run,
    split,
    strongly_typed,
)

A = "ambiguous"


def items(*values: int) -> list[dict[str, int]]:
    return [{"x": v} for v in values]


def expect(*values: object) -> list[Outcome]:
    """None -> no parse, A -> ambiguous, anything else -> that value."""
    return [Outcome("none") if v is None else Outcome(A) if v == A else Outcome("value", v)
            for v in values]


# Common definitions of §6 (Python API).
f = atom("true", "x")
fe, fo = atom("x % 2 == 0", "x"), atom("x % 2 == 1", "x")
u = atom("true", "unit")
any_ = iterate(eps(UNIT), u, "pi1")
fsum = iterate(eps(0), f, "+")

COMMON = """
let f = atom(true, x) in
let fe = atom(x % 2 == 0, x) in
let fo = atom(x % 2 == 1, x) in
let u = atom(true, unit) in
let any_ = iter(eps(unit), u, pi1) in
let fsum = iter(eps(0), f, +) in
"""


def both(query, text: str):
    """The same query built with the API and parsed from text (sharing COMMON)."""
    return [query, parse(COMMON + text)]


T1 = both(combine(iterate(f, f, "+"), iterate(atom("true", "1"), atom("true", "1"), "+"),
                  lambda a, b: Fraction(a, b)),
          "combine(iter(f, f, +), iter(atom(true, 1), atom(true, 1), +), (a, b) -> a / b)")
T2 = both(fsum, "fsum")
T2_UNIT = both(iterate(eps(UNIT), u, "pi1"), "iter(eps(unit), u, (a, b) -> unit)")
T3 = both(split(any_, fsum, "pi2"), "split(any_, fsum, pi2)")
T4 = both(split(any_, split(f, f, "+"), "pi2"), "split(any_, split(f, f, +), pi2)")
T5 = both(split(fsum, fsum, "+"), "split(fsum, fsum, +)")
T6 = both(split(iterate(eps(0), fe | fo, "+"), split(fo, fo, "+"), "max"),
          "split(iter(eps(0), fe | fo, +), split(fo, fo, +), max)")
T7 = both(iterate(eps(0), f | atom("true", "0"), "+"), "iter(eps(0), f | atom(true, 0), +)")
T8 = both(iterate(eps(0) | eps(10), atom("x == 1", "x") | atom("x == 2", "100")
                  | atom("x == 2", "200"), "+"),
          "iter(eps(0) | eps(10), atom(x == 1, x) | atom(x == 2, 100) | atom(x == 2, 200), +)")
_G9 = iterate(eps(0), atom("true", "0"), "pi2")
T9 = both(combine(split(_G9, split(f, f, "max"), "pi2"), split(_G9, split(f, f, "min"), "pi2"),
                  lambda a, b: Fraction(a + b, 2)),
          """let g = iter(eps(0), atom(true, 0), pi2) in
             combine(split(g, split(f, f, max), pi2), split(g, split(f, f, min), pi2), avg)""")


def _t10_api():
    hi_id, lo_u, hi_u = atom("x > 10", "x"), atom("x <= 10", "unit"), atom("x > 10", "unit")
    ep = iterate(hi_id, hi_id, "max")
    block = split(ep, iterate(lo_u, lo_u, "pi1"), "pi1")
    blocks = iterate(apply(block, lambda m: (m, 1)), block, lambda p, m: (p[0] + m, p[1] + 1))
    lead = iterate(eps(UNIT), lo_u, "pi1")
    trail = iterate(eps(UNIT), hi_u, "pi1")
    return split(split(lead, blocks, "pi2"), trail, lambda p, _: Fraction(p[0], p[1]))


T10 = both(_t10_api(), """
let hi_id = atom(x > 10, x) in
let lo_u = atom(x <= 10, unit) in
let hi_u = atom(x > 10, unit) in
let ep = iter(hi_id, hi_id, max) in        # episode maximum
let gap = iter(lo_u, lo_u, pi1) in
let block = split(ep, gap, pi1) in         # a completed episode
let mk = m -> (m, 1) in
let acc = (p, m) -> (p[0] + m, p[1] + 1) in
let blocks = iter(apply(block, mk), block, acc) in
let lead = iter(eps(unit), lo_u, pi1) in
let trail = iter(eps(unit), hi_u, pi1) in
apply(split(split(lead, blocks, pi2), trail, pi1), p -> p[0] / p[1])""")

CASES = [
    ("T1", T1, items(2, 4, 9, 1), expect(None, 2, 3, 5, 4), True),
    ("T2", T2, items(3, 1, 4), expect(0, 3, 4, 8), True),
    ("T2-unit", T2_UNIT, items(3, 1, 4), expect(UNIT, UNIT, UNIT, UNIT), True),
    ("T3", T3, items(3, 1, 4), expect(0, A, A, A), False),
    ("T4", T4, items(3, 1, 4), expect(None, None, 4, 5), True),
    ("T5", T5, items(3, 1), expect(0, A, A), False),
    ("T6", T6, items(4, 3, 5, 1, 7, 2), expect(None, None, None, 8, 7, 12, None), True),
    ("T7", T7, items(1, 2, 3, 4), expect(0, A, A, A, A), False),
    ("T8", T8, items(1, 2), expect(A, A, A), False),
    ("T9", T9, items(3, 5, 1, 8), expect(None, None, 4, 3, Fraction(9, 2)), True),
    ("T10", T10, items(5, 12, 15, 10, 11, 13, 3, 20, 2),
     expect(None, None, None, None, 15, 15, 15, 14, 14, 16), True),
    ("T10-b", T10, items(12, 3, 3, 20, 25), expect(None, None, 12, 12, 12, 12), True),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("form", [0, 1], ids=["api", "text"])
@pytest.mark.parametrize(("name", "queries", "stream", "expected", "strong"), CASES, ids=IDS)
def test_example_on_every_engine(name, queries, stream, expected, strong, form):
    query = queries[form]
    assert evaluate(query, stream) == expected
    assert reference(query, stream) == expected
    assert reference_poly(query, stream) == expected
    assert strongly_typed(query)[0] is strong
    if strong:
        assert run(HierarchicalEvaluator(), query, stream) == expected


def _multisets(query, stream):
    return [sorted(m) for m in reference_multiset(query, stream)]


@pytest.mark.parametrize("form", [0, 1], ids=["api", "text"])
def test_multisets_of_ambiguous_examples(form):
    assert _multisets(T3[form], items(3, 1, 4)) == [[0], [0, 3], [0, 1, 4], [0, 4, 5, 8]]
    assert _multisets(T5[form], items(3, 1)) == [[0], [3, 3], [4, 4, 4]]
    assert _multisets(T7[form], items(1, 2, 3, 4))[3] == [0, 1, 2, 3, 3, 4, 5, 6]
    assert _multisets(T7[form], items(1, 2, 3, 4))[4] == [0, 1, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7,
                                                        7, 8, 9, 10]
    # T8, the paper's mfold example: {0,10} folded with {1} then {100,200}.
    assert Counter(reference_multiset(T8[form], items(1, 2))[2]) == Counter([101, 201, 111, 211])


def test_example6_partial_sums_on_abc():
    a, b, c = 5, 30, 700
    assert sorted(reference_multiset(T7[0], items(a, b, c))[3]) == sorted(
        [a + b + c, a + b, a + c, a, b + c, b, c, 0])


def _states(query, stream):
    state = DerivativeEvaluator.start(query)
    sizes = [len(state.queries)]
    for item in stream:
        state = state.step(item)
        sizes.append(len(state.queries))
    return sizes


def test_antimirov_state_counts():
    # Example 7 / T6: one spine plus one pending thread per live cut point.
    assert _states(T6[0], items(4, 3, 5, 1)) == [1, 1, 2, 3, 3]
    # Example 10 / T2: a single query holding the running total.
    assert _states(T2[0], items(3, 1, 4, 1, 5)) == [1] * 6
    # Example 14 / T9: the cartesian product 1 -> 4 -> 9 -> 9.
    assert _states(T9[0], items(3, 5, 1, 8)) == [1, 4, 9, 9, 9]
    # T3: pending threads share one rate, pruning caps the state at 3 queries.
    assert max(_states(T3[0], items(*range(30)))) <= 3
    # T7: every query has the same rate, so at most 2 survive (2^n outputs otherwise).
    assert max(_states(T7[0], items(*range(30)))) <= 2
    assert evaluate(T7[0], items(*range(30)))[-1] == Outcome(A)


def test_hierarchical_example14_keeps_one_top_node():
    state = HierarchicalEvaluator().start(T9[0])
    for item in items(3, 5):
        state = state.step(item)
        assert len(state.qset) == 1
    top = state.qset[0]
    assert len(top.left) + len(top.right) == 3 + 3  # the paper's count after "35"
    assert state.output() == Outcome("value", 4)


def test_example4_regular_expression_derivatives():
    from engine.qre.relang import alt, cat, chars, deriv, nullable, star

    a, b = chars([0]), chars([1])
    r = cat(star(alt(a, b)), b, b)
    assert deriv(r, 0) == r
    assert deriv(deriv(r, 0), 1) == alt(r, b)
    assert nullable(deriv(deriv(deriv(r, 0), 1), 1))
    assert not nullable(deriv(deriv(r, 0), 1))

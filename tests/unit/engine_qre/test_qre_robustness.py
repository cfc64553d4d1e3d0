"""Regressions: inputs that made the QRE front end raise a non-QRE exception."""

from __future__ import annotations

import pytest

from engine.errors import RepriseError
from engine.qre import (
    QREError,
    QRESyntaxError,
    QRETypeError,
    evaluate,
    parse,
    reference,
    reference_poly,
    strongly_typed,
)
from engine.qre.terms import MAX_DEPTH
from engine.qre.text import MAX_NESTING
from engine.qre.values import Failure, Outcome

AVERAGE = "combine(sum(true, heart_rate), count(true), /)"


def test_qre_errors_are_reprise_errors():
    assert issubclass(QREError, RepriseError)


def test_an_average_parses_its_empty_stream_output_is_an_error_value():
    query = parse(AVERAGE)
    items = [{"heart_rate": 60}, {"heart_rate": 90}]
    for engine in (evaluate, reference, reference_poly):
        first, *rest = engine(query, items)
        assert first.kind == "error" and "ZeroDivisionError" in first.value.reason
        assert rest == [Outcome("value", 60.0), Outcome("value", 75.0)]


@pytest.mark.parametrize("text, problem", [
    ("eps(4/0)", "cannot be computed: ZeroDivisionError"),
    ("eps(unit-3)", "expected num but 'unit' has type unit"),
    ("eps(1<unit)", "cannot compare num with unit"),
    ("eps((1, 2)[5])", "cannot index"),
])
def test_eps_constants_that_cannot_be_computed_are_type_errors(text, problem):
    with pytest.raises(QRETypeError, match=problem):
        parse(text)


def test_a_failing_operation_is_a_failure_value_that_propagates():
    query = parse("iter(eps(0), atom(true, 100 / x), +)")
    outcomes = evaluate(query, [{"x": 4}, {"x": 0}, {"x": 5}])
    assert outcomes[:2] == [Outcome("value", 0), Outcome("value", 25.0)]
    assert [o.kind for o in outcomes[2:]] == ["error", "error"]
    assert outcomes[3].value == Failure("the operation '(100 / x)' failed: ZeroDivisionError: "
                                        "division by zero")


@pytest.mark.parametrize("text, limit", [
    ("(" * (MAX_NESTING + 1) + "eps(1)" + ")" * (MAX_NESTING + 1), "nests more than 50"),
    ("split(" * 320 + "eps(1)" + ", eps(1), +)" * 320, "nests more than 50"),
    ("let a = eps(1) in " * 600 + "a", "nests more than 50"),
    ("atom(true, " + "(" * 490 + "x" + ")" * 490 + ")", "more than 30 levels of parentheses"),
    ("atom(" + "not " * 2000 + "true, 1)", "more than 100 levels deep"),
    ("eps(" + "-" * 2000 + "1)", "more than 100 levels deep"),
    ("atom(true, " + " + ".join(["x"] * 500) + ")", "more than 100 levels deep"),
    (" | ".join(f"atom(x == {i}, 1)" for i in range(340)), "more than 100 constructs deep"),
])
def test_deep_nesting_is_a_syntax_or_type_error(text, limit):
    with pytest.raises((QRESyntaxError, QRETypeError), match=limit):
        parse(text)


def test_the_nesting_limits_admit_queries_up_to_them():
    inner = MAX_NESTING - 1  # the whole query is the first level
    assert parse("(" * inner + "eps(1)" + ")" * inner)
    chain = parse(" | ".join(f"atom(x == {i}, 1)" for i in range(MAX_DEPTH)))
    assert strongly_typed(chain)[0]


@pytest.mark.parametrize("text", [
    "iter(eps(0), atom(x > 100, 1) | atom(x <= 1e309, 0), +)",
    "atom(x % 1e309 == 1, 1) | atom(x > 1, 2)",
    "atom(1 / 0 < 2, 1) | atom(x > 1, 2)",
])
def test_the_strong_typing_check_handles_infinite_and_failing_constants(text):
    ok, reason = strongly_typed(parse(text))
    assert isinstance(ok, bool) and reason

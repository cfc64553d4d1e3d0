"""Clear errors: malformed text (line/column), ill-typed queries, iteration bodies that match
the empty stream, items missing a referenced field, non-strongly-typed queries."""

from __future__ import annotations

import pytest

from engine.qre import (
    UNIT,
    HierarchicalEvaluator,
    MissingFieldError,
    QRESyntaxError,
    QRETypeError,
    apply,
    atom,
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


@pytest.mark.parametrize(("text", "line", "column", "words"), [
    ("atom(x >, 1)", 1, 9, "expected an operand"),
    ("let f = atom(true, x) in\n  split(f, f +)", 2, 14, "expected ','"),
    ("split(eps(0),\n  eps(1), plus)", 2, 11, "expected an operation"),
    ("iter(eps(0), atom(true, x), +) extra", 1, 32, "end of query"),
    ("atom(true, x $ 2)", 1, 14, "unexpected character '$'"),
    ("let q = eps(1) in\n\n   nope", 3, 4, "unknown query name"),
    ("apply(eps(1), (a, a) -> a)", 1, 15, "duplicate lambda parameter"),
    ("apply(eps(1), y -> z)", 1, 20, "unknown name 'z'"),
    ("eps(x)", 1, 5, "eps takes a constant"),
    ("atom(true, abs(x, 1))", 1, 21, "abs takes 1 argument"),
    ("atom(true, x[y])", 1, 14, "non-negative integer index"),
])
def test_syntax_errors_report_line_and_column(text, line, column, words):
    with pytest.raises(QRESyntaxError) as err:
        parse(text)
    assert (err.value.line, err.value.column) == (line, column)
    assert f"line {line}, column {column}" in str(err.value)
    assert words in str(err.value)


def test_syntax_errors_in_expression_strings():
    with pytest.raises(QRESyntaxError, match="column 5"):
        atom("x > > 1", "x")


fsum = iterate(eps(0), atom("true", "x"), "+")
any_ = iterate(eps(UNIT), atom("true", "unit"), "pi1")


def test_type_error_names_the_subexpression():
    with pytest.raises(QRETypeError) as err:
        split(any_, fsum, "+")
    message = str(err.value)
    assert "'+' expects numbers" in message and "unit" in message
    assert "iter(eps(unit), atom(true, unit), pi1)" in message


def test_arity_and_branch_type_errors():
    with pytest.raises(QRETypeError, match="takes 2 argument"):
        apply(fsum, "+")
    with pytest.raises(QRETypeError, match="takes 1 argument"):
        combine(fsum, fsum, "x -> x")
    with pytest.raises(QRETypeError, match="different types"):
        choice(fsum, any_)
    with pytest.raises(QRETypeError, match="fold operation returns"):
        iterate(eps(UNIT), atom("true", "1"), "pi2")
    with pytest.raises(QRETypeError, match="cannot index"):
        apply(eps(1), "v -> v[0]")
    with pytest.raises(QRETypeError, match="not bool"):
        atom("x + 1", "x")
    with pytest.raises(QRETypeError, match="expected a query"):
        split(fsum, 3, "+")  # type: ignore[arg-type]


def test_type_errors_in_text_carry_position():
    with pytest.raises(QRETypeError, match=r"line 2, column 3: .*'max' expects numbers"):
        parse("let all = iter(eps(unit), atom(true, unit), pi1) in\n  split(all, eps(1), max)")


def test_iterate_rejects_a_body_matching_the_empty_stream():
    with pytest.raises(QRETypeError, match="matches the empty stream") as err:
        iterate(eps(0), fsum, "+")
    assert "iter(eps(0), atom(true, x), +)" in str(err.value)
    with pytest.raises(QRETypeError, match="matches the empty stream"):
        parse("iter(eps(0), eps(1) | atom(true, x), +)")


@pytest.mark.parametrize("engine", ["evaluate", "reference", "poly", "hierarchical"])
def test_missing_field_is_named(engine):
    query = split(atom("x > 0", "x"), atom("true", "y"), "+")
    stream = [{"x": 1, "y": 2}, {"x": 3}]
    runner = {"evaluate": evaluate, "reference": reference, "poly": reference_poly,
              "hierarchical": lambda q, s: run(HierarchicalEvaluator(), q, s)}[engine]
    with pytest.raises(MissingFieldError, match="missing field 'y'") as err:
        runner(query, stream)
    assert err.value.field == "y"


def test_strong_typing_reasons():
    ok, reason = strongly_typed(split(fsum, fsum, "+"))
    assert not ok and "split" in reason and "unambiguously concatenable" in reason
    ok, reason = strongly_typed(atom("x > 1", "x") | atom("x > 2", "x"))
    assert not ok and "overlap" in reason and "(x > 1)" in reason and "(x > 2)" in reason
    assert strongly_typed(atom("x > 1", "x") | atom("x <= 1", "x")) == (True, "strongly typed")
    ok, reason = strongly_typed(combine(fsum, iterate(atom("true", "x"), atom("true", "x"), "+"),
                                        "+"))
    assert not ok and "different rates" in reason and "empty stream" in reason
    body = atom("true", "x") | split(atom("true", "x"), atom("true", "x"), "+")
    ok, reason = strongly_typed(iterate(eps(0), body, "+"))
    assert not ok and "not unambiguously iterable" in reason
    ok, reason = strongly_typed(iterate(fsum, atom("true", "x"), "+"))
    assert not ok and "init of an iteration" in reason
    # An opaque callable is an unknown boolean: two of them may overlap.
    ok, reason = strongly_typed(atom(lambda d: d["x"] > 1, "x") | atom(lambda d: d["x"] <= 1, "x"))
    assert not ok and "overlap" in reason


def test_hierarchical_engine_is_gated_on_strong_typing():
    with pytest.raises(QRETypeError, match="strongly typed"):
        HierarchicalEvaluator().start(split(fsum, fsum, "+"))


def test_bad_predicate_and_operation_objects():
    with pytest.raises(QRETypeError, match="predicate must be"):
        atom(3, "x")  # type: ignore[arg-type]
    with pytest.raises(QRETypeError, match="operation must be"):
        split(fsum, fsum, 3)  # type: ignore[arg-type]

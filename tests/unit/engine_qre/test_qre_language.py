"""The language: safe expressions, named operations and lambdas, let-bindings, sugar (checked
against its documented expansion), callables next to expression strings."""

from __future__ import annotations

from fractions import Fraction

import pytest

from engine.qre import (
    UNIT,
    Outcome,
    QRESyntaxError,
    any_items,
    apply,
    atom,
    average,
    combine,
    count,
    eps,
    evaluate,
    iterate,
    parse,
    plus,
    reference,
    split,
    suffix,
    total,
)
from engine.qre.expr import parse_item_expr


def items(*values: int) -> list[dict[str, int]]:
    return [{"x": v} for v in values]


def values(outcomes: list[Outcome]) -> list[object]:
    return [o.value if o.kind == "value" else o.kind for o in outcomes]


@pytest.mark.parametrize(("text", "item", "expected"), [
    ("x + y * 2", {"x": 1, "y": 3}, 7),
    ("(x + y) * 2", {"x": 1, "y": 3}, 8),
    ("x - y - 1", {"x": 10, "y": 3}, 6),
    ("x // 4 + x % 4", {"x": 11}, 5),
    ("x / 4", {"x": 2}, 0.5),
    ("-x + abs(-3)", {"x": 1}, 2),
    ("max(x, 3) + min(x, 3)", {"x": 7}, 10),
    ("x > 1 and not (y == 2) or false", {"x": 2, "y": 3}, True),
    ("x >= 1 and x <= 1 and x != 2", {"x": 1}, True),
    ("name == 'a' or name == \"b\"", {"name": "b"}, True),
    ("(x, y)[1]", {"x": 1, "y": 2}, 2),
    ("unit", {}, UNIT),
    ("1.5e1 + .5", {}, 15.5),
])
def test_expression_language(text, item, expected):
    assert parse_item_expr(text)(item) == expected


@pytest.mark.parametrize("text", ["__import__('os')", "x.real", "x if y else z",
                                  "lambda: 1", "[x]", "x ** 2", "open('f')"])
def test_expression_language_has_no_escape_hatch(text):
    with pytest.raises(QRESyntaxError):
        parse_item_expr(text)


def test_callables_and_strings_mix():
    q = iterate(eps(Fraction(0)), atom(lambda d: d["x"] > 0, lambda d: Fraction(d["x"], 3)),
                lambda a, b: a + b)
    assert values(evaluate(q, items(1, 2))) == [0, Fraction(1, 3), 1]
    q2 = combine(iterate(eps(0), atom("x > 0", "x"), "+"), q, "(a, b) -> a - b")
    assert values(evaluate(q2, items(3))) == [0, 2]


def test_let_bindings_named_ops_and_lambdas():
    text = """
    # the sum of the last two items, with a let-bound lambda
    let add = (a, b) -> a + b in
    let f = atom(true, x) in
    let last_two = split(f, f, add) in
    split(iter(eps(unit), atom(true, unit), pi1), last_two, pi2)
    """
    assert values(evaluate(parse(text), items(3, 1, 4))) == ["none", "none", 4, 5]
    shadow = "let f = atom(true, x) in let f = apply(f, v -> v * 10) in f"
    assert values(evaluate(parse(shadow), items(2))) == ["none", 20]
    for op, expected in [("+", 7), ("-", -1), ("*", 12), ("max", 4), ("min", 3), ("pi1", 3),
                         ("pi2", 4), ("pair", (3, 4)), ("avg", 3.5), ("/", 0.75)]:
        q = parse(f"split(atom(true, x), atom(true, x), {op})")
        assert values(evaluate(q, items(3, 4)))[-1] == expected, op
    assert values(evaluate(parse("apply(atom(true, x), id)"), items(9))) == ["none", 9]
    assert values(evaluate(parse("apply(atom(true, x), unit)"), items(9))) == ["none", UNIT]


def test_choice_syntax_and_operator():
    q = parse("atom(x > 1, x) | atom(x < 5, 0) | bottom")
    assert values(evaluate(q, items(0, 3, 9)))[1] == 0
    assert values(evaluate(q, items(3))) == ["none", "ambiguous"]
    q2 = atom("x > 1", "x") | atom("x < 5", "0")
    assert values(evaluate(q2, items(9))) == ["none", 9]


# Each sugar form against its documented expansion, through the API and the text syntax.
SUGAR = [
    (any_items(), "any", "iter(eps(unit), atom(true, unit), pi1)"),
    (plus("x > 1", "x", "max"), "plus(x > 1, x, max)",
     "iter(atom(x > 1, x), atom(x > 1, x), max)"),
    (count("x % 2 == 0"), "count(x % 2 == 0)", "iter(eps(0), atom(x % 2 == 0, 1), +)"),
    (total("true", "x * 2"), "sum(true, x * 2)", "iter(eps(0), atom(true, x * 2), +)"),
    (average("x > 0", "x"), "avg(x > 0, x)",
     "combine(iter(atom(x > 0, x), atom(x > 0, x), +),"
     "        iter(atom(x > 0, 1), atom(x > 0, 1), +), /)"),
    (suffix(split(atom("true", "x"), atom("true", "x"), "+")),
     "last(split(atom(true, x), atom(true, x), +))",
     "split(iter(eps(unit), atom(true, unit), pi1), split(atom(true, x), atom(true, x), +), pi2)"),
]


@pytest.mark.parametrize(("api", "sugar", "expansion"), SUGAR, ids=[s[1] for s in SUGAR])
def test_sugar_is_its_expansion(api, sugar, expansion):
    stream = items(4, 2, 7, 1, 6, 3)
    expected = reference(parse(expansion), stream)
    assert evaluate(api, stream) == expected
    assert evaluate(parse(sugar), stream) == expected


def test_sugar_values():
    assert values(evaluate(average("x > 0", "x"), items(2, 4, 9, 1))) == ["none", 2, 3, 5, 4]
    assert values(evaluate(count("true"), items(5, 5, 5))) == [0, 1, 2, 3]
    assert values(evaluate(total("true", "x"), items(3, 1, 4))) == [0, 3, 4, 8]
    assert values(evaluate(suffix(atom("true", "x")), items(3, 1))) == ["none", 3, 1]


def test_bottom_and_apply_in_api():
    q = apply(split(atom("true", "x"), eps(10), "+"), "v -> v * 2")
    assert values(evaluate(q, items(1))) == ["none", 22]


def test_readme_examples_parse_and_run():
    from pathlib import Path

    readme = (Path(__file__).parents[3] / "engine" / "qre" / "README.md").read_text()
    block = readme.split("### Examples")[1].split("```")[1]
    texts = [t for t in block.split("\n\n") if t.strip()]
    assert len(texts) == 3
    outputs = [values(evaluate(parse(t), items(4, 3, 5, 12, 15, 10))) for t in texts]
    assert outputs[0][-1] == 25 and outputs[1][3] == 8 and outputs[2][-1] == 15
    average_q = parse("let f = atom(true, x) in combine(iter(f, f, +), plus(true, 1, +), /)")
    assert values(evaluate(average_q, items(2, 4))) == ["none", 2.0, 3.0]

"""Fuzzing the QRE front end: whatever the text, ``parse`` and the strong-typing check raise
only QRE errors (never ZeroDivisionError, RecursionError, ...) and never hang.

The inputs are seeded mutations of the catalog's ``kind: qre`` queries and of the README's
examples: truncation, deleted and inserted tokens, deep nesting, numeric edge values and
division by zero. The strong-typing check gets the mutants that parse, and small generated
queries with edge constants.
"""

from __future__ import annotations

import random
import re
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.qre import QREError, Term, parse, strongly_typed

ROOT = Path(__file__).resolve().parents[2]
SEED = 20260424
PARSER_INPUTS = 3000
TYPING_INPUTS = 3000
TIME_LIMIT_S = 5  # a hang guard, far above the milliseconds an input takes

_TOKEN = re.compile(r"\s+|#[^\n]*|\d+\.?\d*(?:[eE][+-]?\d+)?|'[^']*'|\"[^\"]*\"|\w+|->|//|<=|>=|"
                    r"==|!=|.", re.S)
EDGE_NUMBERS = ["0", "0.0", "-0.0", "1e308", "1e309", "1e-320", "9223372036854775807",
                "9223372036854775808", "18446744073709551616", "99999999999999999999999999",
                "1e400 - 1e400", "(0 - 1e309) * 0", ".5", "3 // 0", "1 % 0", "2 / 0"]
INSERTS = ["(", ")", ",", "|", "let", "in", "=", "->", "atom(", "split(", "iter(", "eps(",
           "apply(", "combine(", "bottom", "any", "+", "-", "*", "/", "//", "%", "/ 0", "// 0",
           "% 0", "not", "and", "or", "unit", "true", "false", "x", "[0]", "[7]", "(1, 2)",
           "'s'", "pi1", "pi2", "pair", "max", "min", "avg", "id", ";", "<", "==", "#", "\n",
           "$", "count(", "sum(", "avg(", "plus(", "last(", "abs(", "0", "1e309"]


def samples() -> list[str]:
    """The catalog's QRE queries and the README's examples."""
    texts = []
    for path in sorted((ROOT / "schemas" / "queries").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        if doc.get("kind") == "qre":
            texts.append(doc["query"])
    readme = (ROOT / "engine" / "qre" / "README.md").read_text()
    block = readme.split("### Examples", 1)[1].split("```", 2)[1]
    for chunk in re.split(r"\n\s*\n", block):
        text = "\n".join(line for line in chunk.splitlines() if not line.startswith("#"))
        if text.strip():
            texts.append(text)
    return texts


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _nest(rng: random.Random, text: str) -> str:
    depth = rng.choice([5, 30, 49, 51, 60, 101, 200, 500, 2000])
    kind = rng.randrange(8)
    if kind == 0:
        return "(" * depth + text + ")" * depth
    if kind == 1:
        return "split(" * depth + text + ", eps(1), +)" * depth
    if kind == 2:
        return " | ".join([f"atom(x == {i}, 1)" for i in range(depth)])
    if kind == 3:
        return f"let a{depth} = eps(1) in " * depth + text
    if kind == 4:
        return "atom(" + "not " * depth + "true, 1)"
    if kind == 5:
        return "eps(" + "-" * depth + "1)"
    if kind == 6:
        return "atom(true, " + " + ".join(["x"] * depth) + ")"
    return "atom(true, " + "(" * depth + "x" + ")" * depth + ")"


def mutate(rng: random.Random, text: str) -> str:
    """One random mutation of ``text``."""
    tokens = _tokens(text)
    at = rng.randrange(len(tokens) + 1)
    kind = rng.randrange(7)
    if kind == 0:
        return "".join(tokens[:at])
    if kind == 1:
        end = min(len(tokens), at + rng.randrange(1, 6))
        return "".join(tokens[:at] + tokens[end:])
    if kind == 2:
        return "".join([*tokens[:at], " ", rng.choice(INSERTS), " ", *tokens[at:]])
    if kind == 3:
        numbers = [i for i, t in enumerate(tokens) if t[:1].isdigit()]
        if numbers:
            tokens[rng.choice(numbers)] = rng.choice(EDGE_NUMBERS)
        return "".join(tokens)
    if kind == 4:
        names = [i for i, t in enumerate(tokens) if t[:1].isalpha() or t[:1].isdigit()]
        if names:
            i = rng.choice(names)
            tokens[i] = f"{tokens[i]} {rng.choice(['/', '//', '%'])} 0"
        return "".join(tokens)
    if kind == 5:
        return _nest(rng, text)
    end = min(len(tokens), at + rng.randrange(1, 20))
    return "".join(tokens[:end] + tokens[at:end] + tokens[end:])


def parser_inputs() -> Iterator[str]:
    rng = random.Random(SEED)
    texts = samples()
    yield from texts
    yield "combine(sum(true, heart_rate), count(true), /)"
    yield from ["eps(4/0)", "eps(unit-3)", "eps(1<unit)", "eps((1, 2)[5])"]
    for _ in range(PARSER_INPUTS):
        text = rng.choice(texts)
        for _ in range(rng.choice([1, 1, 2, 3])):
            text = mutate(rng, text)
        yield text


def small_queries(rng: random.Random) -> Iterator[str]:
    """Small generated queries over a field ``x`` with edge constants."""
    consts = ["0", "1", "2", "-1", "0.5", "1e309", "-1e309", "1e308", "9223372036854775808",
              "'a'", "true", "unit", "(1, 2)"]
    preds = ["true", "false", "x > {c}", "x <= {c}", "x == {c}", "x % 2 == 0", "x % 0 == 1",
             "x / 0 > {c}", "{c} < {c}", "not x < {c}", "x > {c} and x < {c}", "x % {c} == 1"]
    ops = ["+", "-", "*", "/", "max", "min", "pi1", "pi2", "(a, b) -> a / b",
           "(a, b) -> a // (b - b)", "(a, b) -> (a, b)[0]"]

    def atom() -> str:
        pred = rng.choice(preds).replace("{c}", rng.choice(consts))
        value = rng.choice(["x", "1", "x / 0", "x % 0", "1 / x", rng.choice(consts)])
        return f"atom({pred}, {value})"

    def query(depth: int) -> str:
        if depth == 0 or rng.random() < 0.3:
            return atom() if rng.random() < 0.8 else f"eps({rng.choice(consts)})"
        form = rng.randrange(5)
        a, b = query(depth - 1), query(depth - 1)
        if form == 0:
            return f"{a} | {b}"
        if form == 1:
            return f"split({a}, {b}, {rng.choice(ops)})"
        if form == 2:
            return f"iter({a}, {atom()}, {rng.choice(ops)})"
        if form == 3:
            return f"combine({a}, {b}, {rng.choice(ops)})"
        return f"apply({a}, v -> v / 0)"

    while True:
        yield query(rng.randrange(1, 5))


class _Hang(Exception):
    pass


@contextmanager
def time_limit(text: str) -> Iterator[None]:
    def stop(*_: Any) -> None:
        raise _Hang(f"over {TIME_LIMIT_S} s on {text[:200]!r}")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def only_qre_errors(call: Callable[[], Any], text: str) -> Any:
    """``call()``, or None if it raised a QRE error; any other exception fails the test."""
    with time_limit(text):
        try:
            return call()
        except QREError:
            return None
        except _Hang:
            raise
        except Exception as exc:
            pytest.fail(f"{type(exc).__name__}: {exc} on {text[:300]!r}")


def test_parse_raises_only_qre_errors():
    inputs = list(parser_inputs())
    assert len(inputs) >= PARSER_INPUTS
    parsed = sum(only_qre_errors(lambda t=text: parse(t), text) is not None for text in inputs)
    assert 0 < parsed < len(inputs)  # the mutations hit both outcomes


def test_strong_typing_check_raises_only_qre_errors():
    rng = random.Random(SEED + 1)
    terms: list[tuple[str, Term]] = []
    mutants, generated = parser_inputs(), small_queries(rng)
    while len(terms) < TYPING_INPUTS:
        text = next(generated) if len(terms) % 4 else next(mutants, None) or next(generated)
        term = only_qre_errors(lambda t=text: parse(t), text)
        if term is not None:
            terms.append((text, term))
    verdicts = [only_qre_errors(lambda q=term: strongly_typed(q), text) for text, term in terms]
    assert any(v and v[0] for v in verdicts) and any(v and not v[0] for v in verdicts)

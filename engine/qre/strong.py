"""The strong-typing check (Sect. 5 of the paper), with a reason when it fails.

A query is strongly typed when, for every subquery: the branches of a choice have disjoint
rates; the rates of a split are unambiguously concatenable; an iteration body's rate is
unambiguously iterable and concatenable after the init's rate; both sides of a combination have
equivalent rates. Rates are decided over the minterms of the query's predicates.
"""

from __future__ import annotations

from .minterms import TooComplex, minterms
from .relang import (
    EMPTY,
    EPS,
    RE,
    alt,
    cat,
    chars,
    concat_ambiguity,
    inequivalence,
    inter,
    iteration_ambiguity,
    member_word,
    star,
)
from .terms import RATE_TERMS, Atom, Choice, Combine, Iter, Split, Term


def _subterms(query: Term) -> list[Term]:
    seen: dict[int, Term] = {}
    stack = [query]
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen[id(node)] = node
            stack.extend(node.children())
    return list(seen.values())


def _short(term: Term) -> str:
    text = str(term)
    return text if len(text) <= 120 else text[:117] + "..."


def strongly_typed(query: Term) -> tuple[bool, str]:
    """``(True, ...)`` if ``query`` is strongly typed, else ``(False, reason)``."""
    nodes = _subterms(query)
    preds = {n.pred.key: n.pred for n in nodes if isinstance(n, Atom)}
    try:
        symbols = minterms(list(preds.values()))
    except TooComplex as err:
        return False, f"cannot analyse the predicates: {err}"
    size = len(symbols)
    memo: dict[int, RE] = {}

    def rate(rid: int) -> RE:
        if rid not in memo:
            term = RATE_TERMS[rid]
            tag = term[0]
            if tag == "pred":
                memo[rid] = chars(i for i, s in enumerate(symbols) if term[1] in s)
            elif tag in ("bot", "eps"):
                memo[rid] = EMPTY if tag == "bot" else EPS
            elif tag == "star":
                memo[rid] = star(rate(term[1]))
            else:
                make = {"or": alt, "cat": cat, "and": inter}[tag]
                memo[rid] = make(rate(term[1]), rate(term[2]))
        return memo[rid]

    def show(word: list[int]) -> str:
        if not word:
            return "the empty stream"
        items = ["{" + ", ".join(sorted(symbols[a])) + "}" for a in word]
        return "[" + ", ".join(items) + "] (each item listed by the predicates it satisfies)"

    for node in nodes:
        problem = None
        if isinstance(node, Choice):
            word = member_word(inter(rate(node.left.rate), rate(node.right.rate)), size)
            if word is not None:
                problem = f"the branches of a choice overlap; both match {show(word)}"
        elif isinstance(node, Split):
            word = concat_ambiguity(rate(node.left.rate), rate(node.right.rate), size)
            if word is not None:
                problem = ("the two parts of a split are not unambiguously concatenable; "
                           f"the cut can move over {show(word)}")
        elif isinstance(node, Iter):
            body = rate(node.body.rate)
            word = iteration_ambiguity(body, size)
            if word is not None:
                problem = ("the body of an iteration is not unambiguously iterable; "
                           f"{show(word)} splits into blocks in two ways")
            else:
                word = concat_ambiguity(rate(node.init.rate), star(body), size)
                if word is not None:
                    problem = ("the init of an iteration is not unambiguously concatenable with "
                               f"the iterated body; the cut can move over {show(word)}")
        elif isinstance(node, Combine):
            word = inequivalence(rate(node.left.rate), rate(node.right.rate), size)
            if word is not None:
                problem = ("the two sides of a combination have different rates; only one "
                           f"matches {show(word)}")
        if problem:
            return False, f"{problem}, in {_short(node)}"
    return True, "strongly typed"

"""Regular expressions over a finite alphabet (symbol ids) with Brzozowski derivatives, and the
language questions the strong-typing checker asks: emptiness of an intersection, equivalence,
unambiguous concatenation and unambiguous iteration. Each search returns a witness word.

Smart constructors normalise unions and intersections up to associativity, commutativity and
idempotence, so every expression has finitely many derivatives.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable
from functools import cache

# ("empty",) ("eps",) ("chars", frozenset) ("or"/"and", frozenset) ("cat", tuple) ("star", r)
RE = tuple
EMPTY: RE = ("empty",)
EPS: RE = ("eps",)


def chars(symbols: Iterable[int]) -> RE:
    symbols = frozenset(symbols)
    return ("chars", symbols) if symbols else EMPTY


def alt(*parts: RE) -> RE:
    flat: set[RE] = set()
    symbols: set[int] = set()
    for part in parts:
        for sub in part[1] if part[0] == "or" else (part,):
            if sub[0] == "chars":
                symbols |= sub[1]
            elif sub != EMPTY:
                flat.add(sub)
    if symbols:
        flat.add(("chars", frozenset(symbols)))
    if not flat:
        return EMPTY
    return next(iter(flat)) if len(flat) == 1 else ("or", frozenset(flat))


def inter(*parts: RE) -> RE:
    flat: set[RE] = set()
    for part in parts:
        flat.update(part[1] if part[0] == "and" else (part,))
    if EMPTY in flat:
        return EMPTY
    return next(iter(flat)) if len(flat) == 1 else ("and", frozenset(flat))


def cat(*parts: RE) -> RE:
    flat: list[RE] = []
    for part in parts:
        if part == EMPTY:
            return EMPTY
        flat.extend(part[1] if part[0] == "cat" else () if part == EPS else (part,))
    if not flat:
        return EPS
    return flat[0] if len(flat) == 1 else ("cat", tuple(flat))


def star(r: RE) -> RE:
    if r in (EMPTY, EPS):
        return EPS
    return r if r[0] == "star" else ("star", r)


@cache
def nullable(r: RE) -> bool:
    tag = r[0]
    if tag in ("eps", "star"):
        return True
    if tag == "or":
        return any(nullable(s) for s in r[1])
    if tag == "and":
        return all(nullable(s) for s in r[1])
    if tag == "cat":
        return all(nullable(s) for s in r[1])
    return False


@cache
def deriv(r: RE, a: int) -> RE:
    tag = r[0]
    if tag == "chars":
        return EPS if a in r[1] else EMPTY
    if tag == "or":
        return alt(*(deriv(s, a) for s in r[1]))
    if tag == "and":
        return inter(*(deriv(s, a) for s in r[1]))
    if tag == "star":
        return cat(deriv(r[1], a), r)
    if tag == "cat":
        head, rest = r[1][0], cat(*r[1][1:])
        first = cat(deriv(head, a), rest)
        return alt(first, deriv(rest, a)) if nullable(head) else first
    return EMPTY


def search(start: Hashable, step: Callable[[Hashable, int], Iterable[Hashable]],
           goal: Callable[[Hashable, int], bool], alphabet: int) -> list[int] | None:
    """Breadth-first search; returns the word leading to the first state with goal(state,
    length) true, or None."""
    parent: dict[Hashable, tuple[Hashable, int] | None] = {start: None}
    depth = {start: 0}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        if goal(state, depth[state]):
            word: list[int] = []
            node = state
            while parent[node] is not None:
                node, symbol = parent[node]  # type: ignore[misc]
                word.append(symbol)
            return word[::-1]
        for a in range(alphabet):
            for nxt in step(state, a):
                if nxt not in parent:
                    parent[nxt] = (state, a)
                    depth[nxt] = depth[state] + 1
                    queue.append(nxt)
    return None


def _derivs(r: RE, a: int) -> tuple[RE, ...]:
    d = deriv(r, a)
    return (d,) if d != EMPTY else ()


def member_word(r: RE, alphabet: int) -> list[int] | None:
    """Some word of L(r), or None if L(r) is empty."""
    return search(r, _derivs, lambda s, _: nullable(s), alphabet)


def inequivalence(r1: RE, r2: RE, alphabet: int) -> list[int] | None:
    """A word in exactly one of L(r1), L(r2), or None if they are equal."""
    return search((r1, r2), lambda p, a: ((deriv(p[0], a), deriv(p[1], a)),),
                  lambda p, _: nullable(p[0]) != nullable(p[1]), alphabet)


def _states(r: RE, alphabet: int) -> set[RE]:
    seen, queue = {r}, [r]
    while queue:
        state = queue.pop()
        for a in range(alphabet):
            d = deriv(state, a)
            if d not in seen:
                seen.add(d)
                queue.append(d)
    return seen


def concat_ambiguity(r1: RE, r2: RE, alphabet: int) -> list[int] | None:
    """A non-empty ``y`` with ``x, xy`` in L(r1) and ``yz, z`` in L(r2) (so ``xyz`` splits
    two ways), or None if L(r1) and L(r2) are unambiguously concatenable."""
    tails = alt(*(s for s in _states(r1, alphabet) if nullable(s)))

    def step(node: tuple[RE, RE, bool], a: int) -> tuple[tuple[RE, RE, bool]]:
        return ((deriv(node[0], a), deriv(node[1], a), True),)

    def goal(node: tuple[RE, RE, bool], _: int) -> bool:
        if not (node[2] and nullable(node[0])):
            return False
        return member_word(inter(node[1], r2), alphabet) is not None

    return search((tails, r2, False), step, goal, alphabet)  # type: ignore[arg-type]


_START: RE = ("start",)


def iteration_ambiguity(r: RE, alphabet: int) -> list[int] | None:
    """A word of L(r)* with two factorisations (or ``[]`` if ε ∈ L(r)), else None.

    Runs the automaton of L(r)* whose states are derivatives of r plus a marked restart state,
    against itself, and looks for a way back to (restart, restart) after the runs diverged.
    """
    if nullable(r):
        return []

    def moves(state: RE, a: int) -> list[RE]:
        d = deriv(r if state == _START else state, a)
        out = [d] if d != EMPTY else []
        return [*out, _START] if nullable(d) else out

    def step(node: tuple[RE, RE, bool], a: int) -> list[tuple[RE, RE, bool]]:
        p, q, diverged = node
        return [(p2, q2, diverged or p2 != q2) for p2 in moves(p, a) for q2 in moves(q, a)]

    return search((_START, _START, False), step,  # type: ignore[arg-type]
                  lambda n, _: n == (_START, _START, True), alphabet)  # type: ignore[comparison-overlap]

"""QRE terms (the eight core constructs) with cached E, rate key, size and fields.

Terms are immutable. Each node caches, at construction, ``outs`` = E(node) (the multiset of
outputs on the empty stream, as a tuple; an operation that fails gives a ``Failure`` value, it
never raises), ``rate`` (an interned structural key of its rate that ignores values and ops but
keeps predicate identity), ``size``, ``depth`` and the item ``fields`` read anywhere below it.
These constructors do no checking: see ``build`` for the public API (the checked choice,
which ``|`` builds, is here).
"""

from __future__ import annotations

from typing import Any

from .errors import MissingFieldError, QRETypeError
from .ops import Op, Pred
from .types import ANY, Type, join, show

#: The most constructs a query may nest (each ``|`` of a chain of choices is one).
MAX_DEPTH = 100
RateTerm = tuple[Any, ...]
_RATE_IDS: dict[RateTerm, int] = {}
RATE_TERMS: list[RateTerm] = []


def intern_rate(term: RateTerm) -> int:
    """Hash-cons a rate term whose children are rate ids; returns its id."""
    rid = _RATE_IDS.get(term)
    if rid is None:
        rid = _RATE_IDS[term] = len(RATE_TERMS)
        RATE_TERMS.append(term)
    return rid


BOT_RATE = intern_rate(("bot",))
EPS_RATE = intern_rate(("eps",))


class Term:
    """Base class of QRE terms."""

    __slots__ = ("depth", "fields", "outs", "rate", "size", "type")
    outs: tuple[Any, ...]
    rate: int
    size: int
    depth: int
    fields: frozenset[str]
    type: Type | None

    def children(self) -> tuple[Term, ...]:
        return ()

    def _rate(self) -> int:
        raise NotImplementedError

    def __getstate__(self) -> dict[str, Any]:
        # Rate ids are interned per process: never pickle them, recompute them on load.
        slots = (n for cls in type(self).__mro__ for n in getattr(cls, "__slots__", ()))
        return {name: getattr(self, name) for name in slots if name != "rate"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self.rate = self._rate()

    def __or__(self, other: Term) -> Term:
        return choice(self, other)


class Bottom(Term):
    """⊥: undefined everywhere."""

    __slots__ = ()

    def __init__(self) -> None:
        self.outs, self.rate, self.size, self.fields, self.type = (), BOT_RATE, 1, frozenset(), None
        self.depth = 1

    def _rate(self) -> int:
        return BOT_RATE

    def __str__(self) -> str:
        return "bottom"


class Eps(Term):
    """eps(c): the empty stream maps to c."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value
        self.outs, self.rate, self.size, self.depth = (value,), EPS_RATE, 1, 1
        self.fields, self.type = frozenset(), None

    def _rate(self) -> int:
        return EPS_RATE

    def __str__(self) -> str:
        return f"eps({_value_text(self.value)})"


class Atom(Term):
    """atom(pred, op): one item d with pred(d) maps to op(d)."""

    __slots__ = ("op", "pred")

    def __init__(self, pred: Pred, op: Op):
        self.pred, self.op = pred, op
        self.outs, self.size, self.type, self.depth = (), 2, None, 1
        self.rate = self._rate()
        self.fields = pred.fields | op.fields

    def _rate(self) -> int:
        return intern_rate(("pred", self.pred.key))

    def __str__(self) -> str:
        return f"atom({self.pred.key}, {self.op})"


class Choice(Term):
    """f | g: nondeterministic choice (multiplicities add)."""

    __slots__ = ("left", "right")

    def __init__(self, left: Term, right: Term):
        self.left, self.right = left, right
        self.outs = left.outs + right.outs
        self.rate = self._rate()
        self.size = 1 + left.size + right.size
        self.depth = 1 + max(left.depth, right.depth)
        self.fields, self.type = left.fields | right.fields, None

    def _rate(self) -> int:
        return intern_rate(("or", self.left.rate, self.right.rate))

    def children(self) -> tuple[Term, ...]:
        return (self.left, self.right)

    def __str__(self) -> str:
        return f"({self.left} | {self.right})"


class _Binary(Term):
    """A term running two sub-terms and joining their outputs with an operation."""

    __slots__ = ("left", "op", "right")
    #: Rate constructor tag and printed name of the concrete term.
    tag = ""
    name = ""

    def __init__(self, left: Term, right: Term, op: Op):
        self.left, self.right, self.op = left, right, op
        self.outs = tuple(op(a, b) for a in left.outs for b in right.outs)
        self.rate = self._rate()
        self.size = 1 + left.size + right.size
        self.depth = 1 + max(left.depth, right.depth)
        self.fields, self.type = left.fields | right.fields | op.fields, None

    def _rate(self) -> int:
        return intern_rate((self.tag, self.left.rate, self.right.rate))

    def children(self) -> tuple[Term, ...]:
        return (self.left, self.right)

    def __str__(self) -> str:
        return f"{self.name}({self.left}, {self.right}, {self.op})"


class Split(_Binary):
    """split(f, g, op): w = uv maps to op(f(u), g(v))."""

    __slots__ = ()
    tag, name = "cat", "split"


class Iter(Term):
    """iter(init, body, op): w = u v1..vn maps to the left fold of op from init(u)."""

    __slots__ = ("body", "init", "op")

    def __init__(self, init: Term, body: Term, op: Op):
        self.init, self.body, self.op = init, body, op
        self.outs = init.outs
        self.rate = self._rate()
        self.size = 1 + init.size + body.size
        self.depth = 1 + max(init.depth, body.depth)
        self.fields, self.type = init.fields | body.fields | op.fields, None

    def _rate(self) -> int:
        return intern_rate(("cat", self.init.rate, intern_rate(("star", self.body.rate))))

    def children(self) -> tuple[Term, ...]:
        return (self.init, self.body)

    def __str__(self) -> str:
        return f"iter({self.init}, {self.body}, {self.op})"


class Apply(Term):
    """op(f): post-process the output of f (also used for partial applications)."""

    __slots__ = ("op", "sub")

    def __init__(self, sub: Term, op: Op):
        self.sub, self.op = sub, op
        self.outs = tuple(op(a) for a in sub.outs)
        self.rate, self.size, self.depth = sub.rate, 1 + sub.size, 1 + sub.depth
        self.fields, self.type = sub.fields | op.fields, None

    def _rate(self) -> int:
        return self.sub.rate

    def children(self) -> tuple[Term, ...]:
        return (self.sub,)

    def __str__(self) -> str:
        return f"apply({self.sub}, {self.op})"


class Combine(_Binary):
    """op(f, g): run f and g on the same input and combine the outputs."""

    __slots__ = ()
    tag, name = "and", "combine"


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "(" + ", ".join(map(_value_text, value)) + ")"
    return repr(value)


def check_item(term: Term, item: Any) -> None:
    """Raise MissingFieldError if ``item`` lacks a field read by ``term``'s expressions."""
    for name in term.fields:
        try:
            item[name]
        except (KeyError, TypeError, IndexError):
            raise MissingFieldError(name, item) from None


def typed(term: Term, kind: Type) -> Term:
    """``term`` with its type ``kind``; a term deeper than :data:`MAX_DEPTH` is refused."""
    if term.depth > MAX_DEPTH:
        raise QRETypeError(f"the query is more than {MAX_DEPTH} constructs deep (each choice "
                           "'|' of a chain counts as one)")
    term.type = kind
    return term


def check_terms(*terms: Any) -> None:
    """Refuse an argument that is not a query."""
    for term in terms:
        if not isinstance(term, Term):
            raise QRETypeError(f"expected a query, got {term!r}")


def choice(f: Term, g: Term) -> Term:
    """Nondeterministic choice ``f | g``: both parses count."""
    check_terms(f, g)
    kind = join(f.type or ANY, g.type or ANY)
    if kind is None:
        raise QRETypeError(f"the branches of ({f} | {g}) have different types: {f} has type "
                           f"{show(f.type or ANY)} but {g} has type {show(g.type or ANY)}")
    return typed(Choice(f, g), kind)

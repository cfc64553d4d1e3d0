"""User-declared algebraic aggregates: ``{init, add, merge, finish}`` in the safe expression
language of :mod:`engine.expr` (no Python eval), evaluated over numpy arrays.

``init`` is a constant: a number or a flat tuple of numbers (the accumulator). ``add: (a, x) ->
a'`` folds one value into an accumulator, ``merge: (a, b) -> a'`` combines two accumulators (it
must be associative and commutative, with ``init`` as identity, and ``add(a, x)`` must equal
``merge(a, add(init, x))``: the engine lifts each value with ``add(init, x)`` and merges, the
reference folds ``add``), ``finish: a -> number``. Expressions use the QRE expression syntax
(arithmetic, comparisons, ``and/or/not``, tuples, ``a[i]``, ``abs/min/max``) plus ``sqrt``,
``exp``, ``log`` and ``pow`` (:data:`engine.expr.functions.UDAF_FUNCTIONS`). All arithmetic is
float64 (division by zero gives inf or nan).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import RepriseError
from ..expr.errors import ExprSyntaxError
from ..expr.functions import UDAF_FUNCTIONS, arities
from ..expr.lexer import TokenStream, tokenize
from ..expr.parser import ExprParser, Tree, render

_FUNCTIONS = arities(UDAF_FUNCTIONS)
_ARITH: dict[str, Callable[..., Any]] = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide,
    "//": np.floor_divide, "%": np.mod}
_CMP: dict[str, Callable[..., Any]] = {
    "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
    "==": np.equal, "!=": np.not_equal}
#: Parts of a udaf and the number of lambda parameters of each (None: a constant).
PARTS = {"init": None, "add": 2, "merge": 2, "finish": 1}


class UdafError(RepriseError):
    """A udaf declaration is invalid; ``part`` names the offending part (init/add/...)."""

    def __init__(self, part: str, problem: str):
        self.part = part
        super().__init__(problem)


@dataclass(frozen=True)
class Lambda:
    """A parsed udaf expression with its parameter names (empty for ``init``)."""

    params: tuple[str, ...]
    tree: Tree

    def __call__(self, *args: Any) -> Any:
        with np.errstate(all="ignore"):
            return evaluate(self.tree, args)


@dataclass(frozen=True)
class Udaf:
    """A user-declared aggregate; the accumulator is ``width`` float64 slots."""

    name: str
    init: Lambda
    add: Lambda
    merge: Lambda
    finish: Lambda
    width: int

    def start(self) -> tuple[np.float64, ...]:
        """The initial accumulator as a tuple of slots."""
        return slots(self.init(), self.width)

    def fold(self, values: list[float]) -> float:
        """``finish`` of ``add`` folded over ``values`` in order (the naive path)."""
        acc: Any = self.init()
        for x in values:
            acc = self.add(acc, np.float64(x))
        return float(self.finish(acc))


def evaluate(tree: Tree, args: tuple[Any, ...]) -> Any:
    """Interpret ``tree`` over numbers or numpy arrays (elementwise); tuples stay tuples."""
    tag = tree[0]
    if tag == "const":
        return np.float64(tree[1])
    if tag == "param":
        return args[tree[1]]
    if tag == "bin":
        return _ARITH[tree[1]](evaluate(tree[2], args), evaluate(tree[3], args))
    if tag == "cmp":
        return _CMP[tree[1]](evaluate(tree[2], args), evaluate(tree[3], args))
    if tag in ("and", "or"):
        fn = np.logical_and if tag == "and" else np.logical_or
        return fn(evaluate(tree[1], args), evaluate(tree[2], args))
    if tag == "not":
        return np.logical_not(evaluate(tree[1], args))
    if tag == "neg":
        return np.negative(evaluate(tree[1], args))
    if tag == "call":
        return UDAF_FUNCTIONS[tree[1]][1](*(evaluate(t, args) for t in tree[2:]))
    if tag == "tuple":
        return tuple(evaluate(t, args) for t in tree[1:])
    if tag == "index":
        value = evaluate(tree[1], args)
        if not isinstance(value, tuple) or tree[2] >= len(value):
            raise TypeError(f"cannot index {render(tree[1])!r} with [{tree[2]}]")
        return value[tree[2]]
    raise TypeError(f"{tag} is not supported in udaf expressions")


def slots(value: Any, width: int) -> tuple[Any, ...]:
    """An accumulator as a tuple of ``width`` numeric slots (a number is one slot)."""
    items = value if isinstance(value, tuple) else (value,)
    if len(items) != width or any(isinstance(v, tuple) for v in items):
        raise TypeError(f"expected a number or a flat tuple of {width} numbers")
    return tuple(np.asarray(v, dtype="float64") for v in items)


def accumulator(values: tuple[Any, ...]) -> Any:
    """Slots back to the accumulator shape the expressions see (one slot: a number)."""
    return values[0] if len(values) == 1 else tuple(values)


def parse_udaf(name: str, parts: dict[str, Any]) -> Udaf:
    """Parse and smoke-test ``{init, add, merge, finish}``; raises :class:`UdafError`."""
    missing = [p for p in PARTS if p not in parts]
    extra = sorted(set(map(str, parts)) - set(PARTS))
    if missing or extra:
        raise UdafError(missing[0] if missing else extra[0],
                        "is required" if missing else "unknown field (expected init, add, merge, "
                        "finish)")
    parsed = {part: _parse(part, str(parts[part]), arity) for part, arity in PARTS.items()}
    try:
        init = parsed["init"]()
        width = len(init) if isinstance(init, tuple) else 1
        slots(init, width)
    except TypeError as exc:
        raise UdafError("init", f"{exc}, got {parts['init']!r}") from exc
    one = np.float64(1.0)
    for part, call in (("add", lambda: parsed["add"](init, one)),
                       ("merge", lambda: parsed["merge"](init, init))):
        try:
            slots(call(), width)
        except TypeError as exc:
            raise UdafError(part, f"{exc} (the shape of init): {parts[part]!r}") from exc
    try:
        result = parsed["finish"](parsed["add"](init, one))
        if isinstance(result, tuple):
            raise TypeError("must return a number, not a tuple")
        float(result)
    except TypeError as exc:
        raise UdafError("finish", f"{exc}: {parts['finish']!r}") from exc
    return Udaf(name, parsed["init"], parsed["add"], parsed["merge"], parsed["finish"], width)


def _parse(part: str, text: str, arity: int | None) -> Lambda:
    """One part: a constant expression (``arity`` None) or a lambda of ``arity`` parameters."""
    try:
        stream = TokenStream(tokenize(text))
        params: tuple[str, ...] = ()
        if arity is not None:
            params = _header(stream)
            if len(params) != arity:
                raise UdafError(part, f"expected a lambda of {arity} parameter(s), got "
                                f"{len(params)}: {text!r}")
        tree = ExprParser(stream, _FUNCTIONS, params).parse()
        if stream.peek().kind != "eof":
            stream.fail("unexpected text after expression")
    except ExprSyntaxError as exc:
        raise UdafError(part, f"does not parse: {exc}: {text!r}") from exc
    if arity is None and _names(tree):
        raise UdafError(part, f"must be a constant (a number or tuple of numbers), got {text!r}")
    if _strings(tree):
        raise UdafError(part, f"strings are not supported in udaf expressions: {text!r}")
    return Lambda(params, tree)


def _header(stream: TokenStream) -> tuple[str, ...]:
    """``x ->`` or ``(a, b) ->``: the parameter names."""
    if stream.peek().kind == "name" and stream.at("->", 1):
        names = [_param(stream)]
    else:
        stream.expect("(")
        names = [_param(stream)]
        while stream.accept(","):
            names.append(_param(stream))
        stream.expect(")")
    stream.expect("->")
    if len(set(names)) != len(names):
        stream.fail("duplicate lambda parameter")
    return tuple(names)


def _param(stream: TokenStream) -> str:
    tok = stream.next()
    if tok.kind != "name":
        stream.fail("expected a parameter name", tok)
    return tok.text


def _names(tree: Tree) -> bool:
    """Does ``tree`` read a field (a free name)?"""
    if tree[0] == "field":
        return True
    return any(_names(c) for c in tree[1:] if isinstance(c, tuple))


def _strings(tree: Tree) -> bool:
    if tree[0] == "const":
        return isinstance(tree[1], str)
    return any(_strings(c) for c in tree[1:] if isinstance(c, tuple))

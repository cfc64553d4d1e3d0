"""QRE expressions: the shared expression language (``engine.expr``) with the QRE functions,
run with Python semantics by a tree walker (no eval/exec) and typed over the QRE types.

Names are item fields, or parameters inside a lambda.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..expr.functions import QRE_FUNCTIONS, arities
from ..expr.lexer import TokenStream, tokenize
from ..expr.parser import ExprParser, Tree, fields_of, render
from .errors import MissingFieldError, QRESyntaxError, QRETypeError
from .types import ANY, BOOL, NUM, Type, join, show, type_of

_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "//": operator.floordiv, "%": operator.mod}
_CMP = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
        "==": operator.eq, "!=": operator.ne}
_FUNCTIONS = arities(QRE_FUNCTIONS)


def run(tree: Tree, env: Any, args: tuple[Any, ...]) -> Any:
    """Interpret ``tree``; ``env`` is the item (a mapping) and ``args`` the lambda arguments."""
    tag = tree[0]
    if tag == "const":
        return tree[1]
    if tag == "field":
        try:
            return env[tree[1]]
        except (KeyError, TypeError, IndexError):
            raise MissingFieldError(tree[1], env) from None
    if tag == "param":
        return args[tree[1]]
    if tag == "bin":
        return _ARITH[tree[1]](run(tree[2], env, args), run(tree[3], env, args))
    if tag == "cmp":
        return _CMP[tree[1]](run(tree[2], env, args), run(tree[3], env, args))
    if tag == "and":
        return bool(run(tree[1], env, args)) and bool(run(tree[2], env, args))
    if tag == "or":
        return bool(run(tree[1], env, args)) or bool(run(tree[2], env, args))
    if tag == "not":
        return not run(tree[1], env, args)
    if tag == "neg":
        return -run(tree[1], env, args)
    if tag == "call":
        return QRE_FUNCTIONS[tree[1]][1](*(run(t, env, args) for t in tree[2:]))
    if tag == "tuple":
        return tuple(run(t, env, args) for t in tree[1:])
    if tag == "index":
        return run(tree[1], env, args)[tree[2]]
    raise AssertionError(f"unknown expression node {tag}")


def infer(tree: Tree, params: tuple[Type, ...] = (), names: tuple[str, ...] = (),
          fields: Mapping[str, Type] | None = None) -> Type:
    """The result type of ``tree`` given parameter types and, if known, field types (``any``
    otherwise); raises QRETypeError if ill-typed."""
    tag = tree[0]
    if tag == "const":
        return type_of(tree[1])
    if tag == "field":
        return (fields or {}).get(tree[1], ANY)
    if tag == "param":
        return params[tree[1]]
    if tag in ("bin", "neg", "call"):
        operands = tree[2:] if tag != "neg" else tree[1:]
        for sub in operands:
            _expect(sub, infer(sub, params, names, fields), NUM, tree, names)
        return NUM
    if tag == "cmp":
        left, right = infer(tree[2], params, names, fields), infer(tree[3], params, names, fields)
        if tree[1] not in ("==", "!=") and join(left, right) is None:
            raise QRETypeError(f"cannot compare {show(left)} with {show(right)} in "
                               f"{render(tree, names)!r}")
        return BOOL
    if tag in ("and", "or", "not"):
        for sub in tree[1:]:
            _expect(sub, infer(sub, params, names, fields), BOOL, tree, names)
        return BOOL
    if tag == "tuple":
        return tuple(infer(t, params, names, fields) for t in tree[1:])
    base = infer(tree[1], params, names, fields)
    if base == ANY:
        return ANY
    if not isinstance(base, tuple) or tree[2] >= len(base):
        raise QRETypeError(f"cannot index {show(base)} with [{tree[2]}] in {render(tree, names)!r}")
    return base[tree[2]]


def _expect(sub: Tree, got: Type, want: Type, whole: Tree, names: tuple[str, ...]) -> None:
    if join(got, want) is None:
        raise QRETypeError(f"expected {show(want)} but {render(sub, names)!r} has type {show(got)} "
                           f"in {render(whole, names)!r}")


@dataclass(frozen=True)
class Expr:
    """A parsed expression; ``params`` is empty for item expressions (names are fields)."""

    tree: Tree
    params: tuple[str, ...] = ()
    fields: frozenset[str] = field(default=frozenset(), compare=False)

    def __call__(self, *args: Any) -> Any:
        if self.params:
            return run(self.tree, None, args)
        return run(self.tree, args[0], ())

    def text(self) -> str:
        body = render(self.tree, self.params)
        if not self.params:
            return body
        return f"({', '.join(self.params)}) -> {body}"

    def result_type(self, param_types: tuple[Type, ...] = (),
                    fields: Mapping[str, Type] | None = None) -> Type:
        """The type of the value, given the types of the parameters and of the fields."""
        return infer(self.tree, param_types or (ANY,) * len(self.params), self.params, fields)


def item_expr(stream: TokenStream) -> Expr:
    """Parse an item expression (names are fields) from ``stream``."""
    tree = ExprParser(stream, _FUNCTIONS).parse()
    return Expr(tree, (), fields_of(tree))


def lambda_body(stream: TokenStream, params: tuple[str, ...]) -> Expr:
    """Parse the body of a lambda with parameters ``params`` from ``stream``."""
    return Expr(ExprParser(stream, _FUNCTIONS, params).parse(), params)


def parse_item_expr(text: str) -> Expr:
    """Parse a whole string as an item expression."""
    stream = TokenStream(tokenize(text, QRESyntaxError), QRESyntaxError)
    result = item_expr(stream)
    if stream.peek().kind != "eof":
        stream.fail("unexpected text after expression")
    return result


"""The safe expression language over item fields and lambda parameters (no eval/exec).

An expression is parsed into a tree of plain tuples (so it pickles and compares by value) and
interpreted by a tree walker. Names are item fields, or parameters inside a lambda.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

from .errors import MissingFieldError, QRESyntaxError, QRETypeError
from .lexer import TokenStream, tokenize
from .types import ANY, BOOL, NUM, Type, join, show, type_of
from .values import UNIT

Tree = tuple[Any, ...]

_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "//": operator.floordiv, "%": operator.mod}
_CMP = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
        "==": operator.eq, "!=": operator.ne}
FUNCTIONS = {"abs": (1, abs), "min": (2, min), "max": (2, max)}
_CONSTANTS = {"true": True, "false": False, "unit": UNIT}
KEYWORDS = frozenset({"and", "or", "not", *_CONSTANTS})


class ExprParser:
    """Recursive-descent parser of expressions; ``params`` are the names bound by a lambda."""

    def __init__(self, stream: TokenStream, params: tuple[str, ...] = ()):
        self.s = stream
        self.params = params

    def parse(self) -> Tree:
        return self._or()

    def _or(self) -> Tree:
        tree = self._and()
        while self.s.accept("or"):
            tree = ("or", tree, self._and())
        return tree

    def _and(self) -> Tree:
        tree = self._not()
        while self.s.accept("and"):
            tree = ("and", tree, self._not())
        return tree

    def _not(self) -> Tree:
        if self.s.accept("not"):
            return ("not", self._not())
        return self._cmp()

    def _cmp(self) -> Tree:
        tree = self._arith()
        tok = self.s.peek()
        if tok.kind == "sym" and tok.text in _CMP:
            self.s.next()
            tree = ("cmp", tok.text, tree, self._arith())
        return tree

    def _arith(self) -> Tree:
        tree = self._term()
        while self.s.peek().kind == "sym" and self.s.peek().text in ("+", "-"):
            tree = ("bin", self.s.next().text, tree, self._term())
        return tree

    def _term(self) -> Tree:
        tree = self._unary()
        while self.s.peek().kind == "sym" and self.s.peek().text in ("*", "/", "//", "%"):
            tree = ("bin", self.s.next().text, tree, self._unary())
        return tree

    def _unary(self) -> Tree:
        if self.s.accept("-"):
            return ("neg", self._unary())
        tree = self._primary()
        while self.s.accept("["):
            tok = self.s.next()
            if tok.kind != "num" or not tok.text.isdigit():
                self.s.fail("expected a non-negative integer index", tok)
            self.s.expect("]")
            tree = ("index", tree, int(tok.text))
        return tree

    def _primary(self) -> Tree:
        tok = self.s.next()
        if tok.kind == "num":
            is_int = tok.text.isdigit()
            return ("const", int(tok.text) if is_int else float(tok.text))
        if tok.kind == "str":
            return ("const", tok.text[1:-1])
        if tok.kind == "name":
            if tok.text in _CONSTANTS:
                return ("const", _CONSTANTS[tok.text])
            if tok.text in KEYWORDS:
                self.s.fail("expected an operand", tok)
            if self.s.at("(") and tok.text in FUNCTIONS:
                return self._call(tok.text)
            if tok.text in self.params:
                return ("param", self.params.index(tok.text))
            if self.params:
                raise QRESyntaxError(f"unknown name {tok.text!r} in lambda body",
                                     tok.line, tok.column)
            return ("field", tok.text)
        if tok.kind == "sym" and tok.text == "(":
            items = [self.parse()]
            while self.s.accept(","):
                items.append(self.parse())
            self.s.expect(")")
            return items[0] if len(items) == 1 else ("tuple", *items)
        self.s.fail("expected an operand", tok)

    def _call(self, name: str) -> Tree:
        self.s.expect("(")
        args = [self.parse()]
        while self.s.accept(","):
            args.append(self.parse())
        self.s.expect(")")
        arity = FUNCTIONS[name][0]
        if len(args) != arity:
            self.s.fail(f"{name} takes {arity} argument(s), got {len(args)}")
        return ("call", name, *args)


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
        return FUNCTIONS[tree[1]][1](*(run(t, env, args) for t in tree[2:]))
    if tag == "tuple":
        return tuple(run(t, env, args) for t in tree[1:])
    if tag == "index":
        return run(tree[1], env, args)[tree[2]]
    raise AssertionError(f"unknown expression node {tag}")


def render(tree: Tree, params: tuple[str, ...] = ()) -> str:
    """Canonical source text of ``tree`` (fully parenthesised binary operators)."""
    tag = tree[0]
    if tag == "const":
        return repr(tree[1]).replace("True", "true").replace("False", "false")
    if tag == "field":
        return tree[1]
    if tag == "param":
        return params[tree[1]] if tree[1] < len(params) else f"arg{tree[1] + 1}"
    if tag in ("bin", "cmp"):
        return f"({render(tree[2], params)} {tree[1]} {render(tree[3], params)})"
    if tag in ("and", "or"):
        return f"({render(tree[1], params)} {tag} {render(tree[2], params)})"
    if tag == "not":
        return f"(not {render(tree[1], params)})"
    if tag == "neg":
        return f"(-{render(tree[1], params)})"
    if tag == "call":
        return f"{tree[1]}(" + ", ".join(render(t, params) for t in tree[2:]) + ")"
    if tag == "tuple":
        return "(" + ", ".join(render(t, params) for t in tree[1:]) + ")"
    return f"{render(tree[1], params)}[{tree[2]}]"


def fields_of(tree: Tree) -> frozenset[str]:
    """Item fields read by ``tree``."""
    if tree[0] == "field":
        return frozenset([tree[1]])
    if tree[0] in ("const", "param"):
        return frozenset()
    subtrees = (c for c in tree[1:] if isinstance(c, tuple))  # skip operator names and indices
    return frozenset().union(*(fields_of(c) for c in subtrees))


def infer(tree: Tree, params: tuple[Type, ...] = (), names: tuple[str, ...] = ()) -> Type:
    """The result type of ``tree`` given parameter types; raises QRETypeError if ill-typed."""
    tag = tree[0]
    if tag == "const":
        return type_of(tree[1])
    if tag == "field":
        return ANY
    if tag == "param":
        return params[tree[1]]
    if tag in ("bin", "neg", "call"):
        operands = tree[2:] if tag != "neg" else tree[1:]
        for sub in operands:
            _expect(sub, infer(sub, params, names), NUM, tree, names)
        return NUM
    if tag == "cmp":
        left, right = infer(tree[2], params, names), infer(tree[3], params, names)
        if tree[1] not in ("==", "!=") and join(left, right) is None:
            raise QRETypeError(f"cannot compare {show(left)} with {show(right)} in "
                               f"{render(tree, names)!r}")
        return BOOL
    if tag in ("and", "or", "not"):
        for sub in tree[1:]:
            _expect(sub, infer(sub, params, names), BOOL, tree, names)
        return BOOL
    if tag == "tuple":
        return tuple(infer(t, params, names) for t in tree[1:])
    base = infer(tree[1], params, names)
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

    def result_type(self, param_types: tuple[Type, ...] = ()) -> Type:
        return infer(self.tree, param_types or (ANY,) * len(self.params), self.params)


def item_expr(stream: TokenStream) -> Expr:
    """Parse an item expression (names are fields) from ``stream``."""
    tree = ExprParser(stream).parse()
    return Expr(tree, (), fields_of(tree))


def lambda_body(stream: TokenStream, params: tuple[str, ...]) -> Expr:
    """Parse the body of a lambda with parameters ``params`` from ``stream``."""
    return Expr(ExprParser(stream, params).parse(), params)


def parse_item_expr(text: str) -> Expr:
    """Parse a whole string as an item expression."""
    stream = TokenStream(tokenize(text))
    result = item_expr(stream)
    if stream.peek().kind != "eof":
        stream.fail("unexpected text after expression")
    return result


"""The expression parser: text to a tree of plain tuples (so it pickles and compares by value).

Trees: ``("const", v)``, ``("field", name)``, ``("param", i)``, ``("bin", op, a, b)``,
``("cmp", op, a, b)``, ``("and"|"or", a, b)``, ``("not", a)``, ``("neg", a)``,
``("call", name, *args)``, ``("tuple", *items)``, ``("index", a, i)``. Names are item fields, or
inside a lambda its parameters. The extension point is ``functions``, the table of function
names a language admits and their arities (``functions.arities``): ``name(args)`` is a call
exactly when ``name`` is in it. Nothing else of the syntax varies between languages.

Limits (a syntax error beyond them, never a Python recursion error): parentheses, brackets and
calls nest at most :data:`MAX_NESTING` levels, and a tree is at most :data:`MAX_DEPTH` levels
deep (a chain of 100 ``+`` is 100 levels).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .lexer import TokenStream
from .values import UNIT

Tree = tuple[Any, ...]

COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
_CONSTANTS = {"true": True, "false": False, "unit": UNIT}
KEYWORDS = frozenset({"and", "or", "not", *_CONSTANTS})
MAX_NESTING = 30
MAX_DEPTH = 100


def depth(tree: Tree) -> int:
    """The number of levels of ``tree`` (a constant or a name is one)."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in node[1:] if isinstance(child, tuple)
                     and child and isinstance(child[0], str))
    return deepest


class ExprParser:
    """Recursive-descent parser of expressions over ``stream``; ``params`` are the names bound
    by a lambda, ``functions`` the callable function names and their arities."""

    def __init__(self, stream: TokenStream, functions: Mapping[str, int],
                 params: tuple[str, ...] = ()):
        self.s = stream
        self.functions = functions
        self.params = params
        self._nesting = 0

    def parse(self) -> Tree:
        """One expression, from the stream's current token."""
        start = self.s.peek()
        if self._nesting == MAX_NESTING:
            self.s.fail_at(f"the expression nests more than {MAX_NESTING} levels of "
                           "parentheses, brackets and calls", start)
        self._nesting += 1
        try:
            tree = self._or()
        finally:
            self._nesting -= 1
        if self._nesting == 0 and depth(tree) > MAX_DEPTH:
            self.s.fail_at(f"the expression is more than {MAX_DEPTH} levels deep", start)
        return tree

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
        return self._prefixed("not", "not", self._cmp)

    def _prefixed(self, word: str, tag: str, operand: Callable[[], Tree]) -> Tree:
        """``operand`` under every leading ``word``, each one a ``(tag, tree)`` node."""
        count = 0
        while self.s.accept(word):
            count += 1
        tree = operand()
        for _ in range(min(count, MAX_DEPTH + 1)):  # deeper is rejected anyway
            tree = (tag, tree)
        return tree

    def _cmp(self) -> Tree:
        tree = self._arith()
        tok = self.s.peek()
        if tok.kind == "sym" and tok.text in COMPARISONS:
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
        return self._prefixed("-", "neg", self._postfix)

    def _postfix(self) -> Tree:
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
            if self.s.at("(") and tok.text in self.functions:
                return self._call(tok.text)
            if tok.text in self.params:
                return ("param", self.params.index(tok.text))
            if self.params:
                self.s.fail_at(f"unknown name {tok.text!r} in lambda body", tok)
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
        arity = self.functions[name]
        if len(args) != arity:
            self.s.fail(f"{name} takes {arity} argument(s), got {len(args)}")
        return ("call", name, *args)


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

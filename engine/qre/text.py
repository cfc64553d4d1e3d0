"""Parser of the textual query syntax (grammar in README.md).

Queries nest at most :data:`MAX_NESTING` levels in the text (the whole query is the first; each
parenthesis, form argument and ``let`` body adds one); deeper text is a syntax error, never a
Python recursion error.
"""

from __future__ import annotations

from collections.abc import Callable

from ..expr.lexer import Token, TokenStream, tokenize
from .build import apply, atom, bottom, combine, eps, iterate, split
from .errors import QRESyntaxError, QRETypeError
from .expr import Expr, item_expr
from .ops import (
    EVALUATION_ERRORS,
    NAMED,
    Op,
    item_op_from_expr,
    op_from_stream,
    pred_from_expr,
)
from .sugar import any_items, average, count, plus, suffix, total
from .terms import Term, choice

MAX_NESTING = 50
_KEYWORDS = frozenset({"let", "in", "bottom", "eps", "atom", "split", "iter", "apply", "combine",
                       "any", "count", "sum", "avg", "plus", "last"})


def parse(text: str) -> Term:
    """Parse a query written in the textual syntax; errors carry line and column."""
    return _Parser(tokenize(text, QRESyntaxError)).program()


class _Parser:
    def __init__(self, tokens: list[Token]):
        self.s = TokenStream(tokens, QRESyntaxError)
        self.queries: dict[str, Term] = {}
        self.ops: dict[str, Op] = {}
        self.nesting = 0

    def program(self) -> Term:
        query = self.query()
        if self.s.peek().kind != "eof":
            self.s.fail("expected end of query")
        return query

    def query(self) -> Term:
        if self.nesting == MAX_NESTING:
            self.s.fail_at(f"the query nests more than {MAX_NESTING} levels", self.s.peek())
        self.nesting += 1
        try:
            return self._query()
        finally:
            self.nesting -= 1

    def _query(self) -> Term:
        if self.s.at("let"):
            return self._let()
        tok = self.s.peek()
        result = self.primary()
        while self.s.accept("|"):
            right = self.primary()
            result = self._build(tok, lambda r=right, left=result: choice(left, r))
        return result

    def _let(self) -> Term:
        self.s.expect("let")
        name = self._name()
        self.s.expect("=")
        saved = dict(self.queries), dict(self.ops)
        if self._looks_like_op():
            self.ops[name] = op_from_stream(self.s, self.ops)
            self.queries.pop(name, None)
        else:
            self.queries[name] = self.query()
            self.ops.pop(name, None)
        self.s.expect("in")
        body = self.query()
        self.queries, self.ops = saved
        return body

    def _looks_like_op(self) -> bool:
        tok, nxt = self.s.peek(), self.s.peek(1)
        if self.s.at("->", 1) or (tok.text in NAMED and nxt.text == "in"):
            return True
        if tok.kind == "name" and tok.text in self.ops and nxt.text == "in":
            return True
        if not self.s.at("("):
            return False
        ahead = 1
        while self.s.peek(ahead).kind == "name" or self.s.at(",", ahead):
            ahead += 1
        return self.s.at(")", ahead) and self.s.at("->", ahead + 1)

    def _name(self) -> str:
        tok = self.s.next()
        if tok.kind != "name" or tok.text in _KEYWORDS:
            self.s.fail("expected a name", tok)
        return tok.text

    def _build(self, tok: Token, make: Callable[[], Term]) -> Term:
        try:
            return make()
        except QRETypeError as err:
            raise QRETypeError(f"line {tok.line}, column {tok.column}: {err}") from None

    def primary(self) -> Term:
        tok = self.s.peek()
        if self.s.accept("("):
            inner = self.query()
            self.s.expect(")")
            return inner
        if tok.kind != "name":
            self.s.fail("expected a query")
        self.s.next()
        word = tok.text
        if word == "bottom":
            return bottom()
        if word == "any":
            return any_items()
        if word in _FORMS:
            kinds, make = _FORMS[word]
            self.s.expect("(")
            args = []
            for i, kind in enumerate(kinds):
                if i:
                    self.s.expect(",")
                args.append(self._arg(kind))
            self.s.expect(")")
            return self._build(tok, lambda: make(*args))
        if word in self.queries:
            return self.queries[word]
        self.s.fail("unknown query name" if word not in _KEYWORDS else "expected a query", tok)

    def _arg(self, kind: str) -> object:
        tok = self.s.peek()
        if kind == "q":
            return self.query()
        if kind == "op":
            return op_from_stream(self.s, self.ops)
        expr = item_expr(self.s)
        if kind == "pred":
            try:
                return pred_from_expr(expr)
            except QRETypeError as err:
                raise QRETypeError(f"line {tok.line}, column {tok.column}: {err}") from None
        if kind == "value":
            if expr.fields:
                self.s.fail("eps takes a constant, not an expression over item fields", tok)
            return self._constant(expr, tok)
        return item_op_from_expr(expr)

    @staticmethod
    def _constant(expr: Expr, tok: Token) -> object:
        """The value of the constant expression ``expr`` of an ``eps`` (starting at ``tok``)."""
        where = f"line {tok.line}, column {tok.column}"
        try:
            expr.result_type()
        except QRETypeError as err:
            raise QRETypeError(f"{where}: {err}") from None
        try:
            return expr({})
        except EVALUATION_ERRORS as exc:
            raise QRETypeError(f"{where}: the constant {expr.text()!r} of eps cannot be "
                               f"computed: {type(exc).__name__}: {exc}") from None


_FORMS: dict[str, tuple[tuple[str, ...], Callable[..., Term]]] = {
    "eps": (("value",), eps),
    "atom": (("pred", "item"), atom),
    "split": (("q", "q", "op"), split),
    "iter": (("q", "q", "op"), iterate),
    "apply": (("q", "op"), apply),
    "combine": (("q", "q", "op"), combine),
    "count": (("pred",), count),
    "sum": (("pred", "item"), total),
    "avg": (("pred", "item"), average),
    "plus": (("pred", "item", "op"), plus),
    "last": (("q",), suffix),
}

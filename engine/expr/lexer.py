"""Tokenizer of the expression language (also used by the QRE query syntax).

Every syntax error is raised as ``error(message, line, column)``: :class:`ExprSyntaxError` unless
the caller passes a subclass of its own (the QRE package passes ``QRESyntaxError``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NoReturn

from .errors import ExprSyntaxError

_TOKEN = re.compile(
    r"""(?P<ws>[ \t\r\n]+|\#[^\n]*)
      | (?P<num>\d+\.\d*(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)
      | (?P<str>"[^"\n]*"|'[^'\n]*')
      | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
      | (?P<sym>->|//|<=|>=|==|!=|[()\[\],|+\-*/%<>=;])""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class Token:
    """One token: ``kind`` is num/str/name/sym/eof, ``text`` its source text."""

    kind: str
    text: str
    line: int
    column: int


def tokenize(text: str, error: type[ExprSyntaxError] = ExprSyntaxError) -> list[Token]:
    """Split ``text`` into tokens (ending with an ``eof`` token); bad characters raise
    ``error``."""
    tokens: list[Token] = []
    pos, line, line_start = 0, 1, 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise error(f"unexpected character {text[pos]!r}", line, pos - line_start + 1)
        kind = match.lastgroup or ""
        chunk = match.group()
        if kind != "ws":
            tokens.append(Token(kind, chunk, line, pos - line_start + 1))
        newlines = chunk.count("\n")
        if newlines:
            line += newlines
            line_start = pos + chunk.rindex("\n") + 1
        pos = match.end()
    tokens.append(Token("eof", "", line, pos - line_start + 1))
    return tokens


class TokenStream:
    """A cursor over tokens with the small helpers recursive-descent parsers need; syntax
    errors are raised as ``error``."""

    def __init__(self, tokens: list[Token], error: type[ExprSyntaxError] = ExprSyntaxError):
        self.tokens = tokens
        self.pos = 0
        self.error = error

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def next(self) -> Token:
        tok = self.peek()
        self.pos += 1
        return tok

    def at(self, text: str, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok.kind in ("sym", "name") and tok.text == text

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.pos += 1
            return True
        return False

    def expect(self, text: str) -> Token:
        if not self.at(text):
            self.fail(f"expected {text!r}")
        return self.next()

    def fail(self, message: str, tok: Token | None = None) -> NoReturn:
        """Raise a syntax error at ``tok`` (default: the next token), saying what was found."""
        tok = tok or self.peek()
        found = "end of input" if tok.kind == "eof" else repr(tok.text)
        self.fail_at(f"{message}, found {found}", tok)

    def fail_at(self, message: str, tok: Token) -> NoReturn:
        """Raise the syntax error ``message`` at ``tok``."""
        raise self.error(message, tok.line, tok.column)

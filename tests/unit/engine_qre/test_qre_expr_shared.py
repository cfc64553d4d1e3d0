"""The expression language is one package (engine.expr) used by QRE queries and UDAFs: the
languages differ only in the function table given to the parser."""

from __future__ import annotations

import pytest

from engine.errors import RepriseError
from engine.expr.errors import ExprSyntaxError
from engine.expr.lexer import TokenStream, tokenize
from engine.expr.parser import ExprParser
from engine.qre import QRESyntaxError, parse
from engine.qre.expr import parse_item_expr
from engine.windows.udaf import UdafError, parse_udaf


def test_the_function_table_is_the_extension_point():
    stream = TokenStream(tokenize("hypot(a, 2) + 1"))
    tree = ExprParser(stream, {"hypot": 2}, ("a",)).parse()
    assert tree == ("bin", "+", ("call", "hypot", ("param", 0), ("const", 2)), ("const", 1))
    with pytest.raises(ExprSyntaxError, match="hypot takes 2 argument"):
        ExprParser(TokenStream(tokenize("hypot(a)")), {"hypot": 2}, ("a",)).parse()


def test_udaf_functions_are_not_qre_functions():
    udaf = parse_udaf("rms", {"init": "(0, 0)", "add": "(a, x) -> (a[0] + x * x, a[1] + 1)",
                              "merge": "(a, b) -> (a[0] + b[0], a[1] + b[1])",
                              "finish": "a -> sqrt(a[0] / a[1])"})
    assert udaf.fold([3.0, 4.0, 5.0, 5.0]) == pytest.approx((75 / 4) ** 0.5)
    with pytest.raises(QRESyntaxError):
        parse("atom(true, sqrt(x))")


def test_syntax_errors_are_the_callers_class_and_reprise_errors():
    with pytest.raises(QRESyntaxError) as err:
        parse_item_expr("x $ 1")
    assert isinstance(err.value, RepriseError) and isinstance(err.value, ExprSyntaxError)
    with pytest.raises(UdafError, match="does not parse"):
        parse_udaf("bad", {"init": "0", "add": "(a, x) -> a $ x", "merge": "(a, b) -> a + b",
                           "finish": "a -> a"})

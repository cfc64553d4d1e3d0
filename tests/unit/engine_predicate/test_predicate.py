"""The predicate form on constructed cases: canonical forms, NULL semantics, simplification,
implication and the errors a user sees."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.errors import RepriseError
from engine.predicate import (
    FALSE,
    MAX_DEPTH,
    TRUE,
    PredicateError,
    conjoin,
    disjoin,
    implies,
    parse_predicate,
)

COLUMNS = {"x": "int", "d": "double", "s": "string", "b": "bool", "t": "timestamp"}


def P(text: str):
    return parse_predicate(text, COLUMNS)


@pytest.mark.parametrize("left, right", [
    ("x > 3", "x >= 4"),
    ("x > 3.5", "x >= 4"),
    ("NOT x <= 3", "x >= 4"),
    ("x BETWEEN 1 AND 5 OR x BETWEEN 6 AND 9", "x BETWEEN 1 AND 9"),
    ("x IN (3, 1, 2)", "x BETWEEN 1 AND 3"),
    ("x NOT IN (1)", "x <> 1"),
    ("x NOT IN (1)", "x <= 0 OR x >= 2"),
    ("NOT (x = 1 OR d < 2)", "x <> 1 AND d >= 2"),
    ("b", "b = TRUE"),
    ("NOT b", "b = FALSE"),
    ("b OR NOT b", "b IS NOT NULL"),
    ("x IS NULL OR x IS NOT NULL", "TRUE"),
    ("x = 1 AND x = 2", "FALSE"),
    ("x IS NULL AND x > 0", "FALSE"),
    ("d > 1 AND d < 2 OR d >= 2 AND d < 3", "d > 1 AND d < 3"),
    ("(x = 1 AND s = 'a') OR (x = 2 AND s = 'a')", "s = 'a' AND x IN (1, 2)"),
    ("x > 3 OR (x > 3 AND d < 1)", "x > 3"),  # absorption
    ("x > 3 AND (x > 1 OR d < 1)", "x > 3"),
    ("t >= '2024-01-01'", "t >= '2024-01-01T00:00:00+00:00'"),
    ("t > '2024-01-01T01:00:00+01:00'", "t >= '2024-01-01 00:00:00.000001'"),
    ("5 < x", "x > 5"),
    ("d = 1", "d = 1.0"),
])
def test_equal_forms(left: str, right: str) -> None:
    assert P(left) == P(right)
    assert P(left).to_sql() == P(right).to_sql()


def test_adjacent_int_ranges_merge_but_a_gap_stays() -> None:
    assert P("x <= 0 OR x >= 2") != P("x IS NOT NULL")
    frame = pd.DataFrame({"x": pd.array([0, 1, 2, None], dtype="Int64")})
    assert list(P("x NOT IN (1)").evaluate(frame)) == [True, False, True, False]
    assert list(P("x <= 0 OR x >= 1").evaluate(frame)) == [True, True, True, False]


def test_excluded_middle_is_not_used_on_values() -> None:
    assert P("x < 1 OR x >= 1") != TRUE
    frame = pd.DataFrame({"x": pd.array([0, None], dtype="Int64"), "d": [float("nan"), 1.0]})
    assert list(P("x < 1 OR x >= 1").evaluate(frame)) == [True, False]
    assert list(P("NOT (d > 0)").evaluate(frame)) == [False, False]  # NaN is NULL


def test_row_evaluation_is_three_valued() -> None:
    row = {"x": None, "d": 1.0, "s": "a", "b": None, "t": None}
    assert P("x > 1").evaluate_row(row) is None
    assert P("x > 1 OR d = 1").evaluate_row(row) is True
    assert P("x > 1 AND d = 2").evaluate_row(row) is False
    assert P("x IS NULL").evaluate_row(row) is True
    assert P("b IS NOT TRUE").evaluate_row(row) is True


def test_timestamps_compare_in_microseconds_in_any_representation() -> None:
    pred = P("t BETWEEN '2024-01-01 00:00:00' AND '2024-01-01 00:00:00.000001'")
    stamps = ["2023-12-31 23:59:59.999999", "2024-01-01 00:00:00", "2024-01-01 00:00:00.000001",
              "2024-01-01 00:00:00.000002", None]
    expected = [False, True, True, False, False]
    as_datetimes = pd.DataFrame({"t": pd.to_datetime(stamps, utc=True, format="ISO8601")})
    as_micros = pd.DataFrame({"t": pd.array([1704067199999999, 1704067200000000,
                                             1704067200000001, 1704067200000002, None],
                                            dtype="Int64")})
    assert list(pred.evaluate(as_datetimes)) == expected
    assert list(pred.evaluate(as_micros)) == expected
    assert [pred.evaluate_row(r) is True for r in as_datetimes.to_dict("records")] == expected


def test_forms_are_hashable_and_ints_stay_ints() -> None:
    pred = P("x IN (1, 2, 7)")
    assert {pred: 1}[P("x = 7 OR x BETWEEN 1 AND 2")] == 1
    bounds = [v for iv in pred.values for v in (iv.lo, iv.hi)]  # type: ignore[attr-defined]
    assert all(type(v) is int for v in bounds)
    assert pred.columns == {"x"}
    assert P("x = 1 AND (d > 2 OR s IS NULL)").columns == {"x", "d", "s"}


def test_and_or_are_order_independent() -> None:
    a, b, c = P("x > 1"), P("d < 2 OR s = 'q'"), P("b")
    assert conjoin(a, b, c) == conjoin(c, conjoin(b, a))
    assert disjoin(a, b, c) == disjoin(disjoin(c, b), a)
    assert conjoin() == TRUE and disjoin() == FALSE


@pytest.mark.parametrize("p, q, expected", [
    ("x BETWEEN 2 AND 3", "x BETWEEN 1 AND 5", True),
    ("x BETWEEN 1 AND 5", "x BETWEEN 2 AND 3", False),
    ("x = 2 AND d > 1", "d > 0", True),
    ("x = 2 AND d > 1", "d > 0 AND x IN (1, 2)", True),
    ("x = 2 AND d > 1", "d > 0 AND x IN (1, 3)", False),
    ("x IS NULL AND d = 1", "x IS NULL", True),
    ("x IS NULL", "x IS NOT NULL", False),
    ("x > 1", "x IS NOT NULL", True),
    ("x IS NOT NULL", "x > 1", False),
    ("x = 1 OR x = 2", "x BETWEEN 0 AND 3", True),
    ("x = 1 OR d = 2", "x = 1", False),
    ("FALSE", "x = 1", True),
    ("x = 1", "TRUE", True),
    ("s > 'a' AND s < 'b'", "s >= 'a'", True),
    ("s >= 'a'", "s > 'a'", False),
    ("d > 1", "d >= 1", True),
    ("d >= 1", "d > 1", False),
])
def test_implication(p: str, q: str, expected: bool) -> None:
    assert implies(P(p), P(q)) is expected


@pytest.mark.parametrize("text, problem", [
    ("hr > 3", "unknown column 'hr' (columns: b, d, s, t, x)"),
    ("x > 'a'", "compares int column 'x' with string 'a'"),
    ("s = 3", "compares string column 's' with int 3"),
    ("b = 1", "compares bool column 'b' with int 1"),
    ("t > 'yesterday'", "is not an ISO timestamp"),
    ("x = NULL", "use IS NULL"),
    ("x = d", "compares two columns"),
    ("x < foo", "unknown column 'foo'"),  # a name where a constant belongs is a column
    ("foo > x", "unknown column 'foo'"),
    ("x IN (foo, 1)", "unknown column 'foo'"),
    ("x IN (d, 1)", "expected a constant to compare with column 'x', got 'd'"),
    ("x + 1 > 2", "expected a column"),
    ("x >", "cannot parse"),
    ("x", "column 'x' has type int, it is not a condition"),
    ("SELECT 1", "unsupported statement"),
    ("x = 99999999999999999999", "out of range for int column 'x'"),
    ("d < 1e999", "is not finite"),
    ("", "expected an SQL condition"),
])
def test_errors_name_the_problem(text: str, problem: str) -> None:
    with pytest.raises(PredicateError) as err:
        P(text)
    assert problem in str(err.value)
    assert isinstance(err.value, RepriseError)


@pytest.mark.parametrize("text", [
    "(" * 400 + "x = 1" + ")" * 400,
    "NOT " * 3000 + "x = 1",
    "(" * (MAX_DEPTH + 1) + "x = 1" + ")" * (MAX_DEPTH + 1),
    " AND ".join(["(x = 1 OR (d = 2"] * 40) + "))" * 40,
])
def test_deep_nesting_is_a_clear_error(text: str) -> None:
    with pytest.raises(PredicateError, match="deeper than"):
        P(text)


def test_long_flat_chains_are_fine() -> None:
    text = " OR ".join(f"x = {i}" for i in range(2000))
    assert P(text) == P("x BETWEEN 0 AND 1999")

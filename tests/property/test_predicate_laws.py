"""Laws of the predicate form, on random SQL conditions and random rows with NULLs and boundary
values: parsing agrees with a direct three-valued interpretation of the SQL tree, vectorised
evaluation agrees with row-at-a-time evaluation, ``to_sql`` round-trips, AND/OR simplification
keeps the rows that pass, and ``implies`` is sound."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from engine.predicate import conjoin, disjoin, implies, parse_predicate

SETTINGS = {"deadline": None, "derandomize": True, "max_examples": 120}
COLUMNS = {"x": "int", "d": "double", "s": "string", "b": "bool", "t": "timestamp"}
STAMPS = ["2024-01-01 00:00:00", "2024-01-01 00:00:00.000001", "2024-02-29 12:30:00",
          "1999-12-31 23:59:59.999999"]
VALUES = {"x": [-2, -1, 0, 1, 2, 3], "d": [-1.0, 0.0, 0.5, 1.0, 2.0],
          "s": ["", "a", "ab", "b", "it's", "a\\b"], "b": [False, True], "t": STAMPS}
CONSTANTS = {"x": ["-1", "0", "1", "2", "1.5", "-0.5"], "d": ["-1.0", "0", "0.5", "1", "2.0"],
             "s": ["''", "'a'", "'ab'", "'b'", "'it''s'", "'a\\b'"], "b": ["TRUE", "FALSE"],
             "t": [f"'{s}'" for s in STAMPS]}


@st.composite
def atoms(draw: st.DrawFn) -> str:
    col = draw(st.sampled_from(sorted(COLUMNS)))
    const = st.sampled_from(CONSTANTS[col])
    form = draw(st.integers(0, 7))
    if form == 0:
        return f"{col} {draw(st.sampled_from(['=', '<>', '!=', '<', '<=', '>', '>=']))} " \
               f"{draw(const)}"
    if form == 1:
        return f"{draw(const)} {draw(st.sampled_from(['=', '<', '>=']))} {col}"
    if form == 2:
        return f"{col} {draw(st.sampled_from(['', 'NOT ']))}BETWEEN {draw(const)} AND " \
               f"{draw(const)}"
    if form == 3:
        items = draw(st.lists(const, min_size=1, max_size=3))
        return f"{col} {draw(st.sampled_from(['IN', 'NOT IN']))} ({', '.join(items)})"
    if form == 4:
        return f"{col} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if form == 5:
        return draw(st.sampled_from(["TRUE", "FALSE", "b", "NOT b", "b IS TRUE",
                                     "b IS NOT FALSE"]))
    return f"{col} {draw(st.sampled_from(['<', '>=']))} {draw(const)}"


def conditions(depth: int = 3) -> st.SearchStrategy[str]:
    return st.recursive(
        atoms(),
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from([" AND ", " OR "]), inner)
            .map(lambda t: f"({t[0]}{t[1]}{t[2]})"),
            inner.map(lambda c: f"NOT ({c})")),
        max_leaves=2 ** depth)


def rows() -> st.SearchStrategy[list[dict]]:
    row = st.fixed_dictionaries({c: st.one_of(st.none(), st.sampled_from(v))
                                 for c, v in VALUES.items()})
    return st.lists(row, min_size=1, max_size=25)


def frame_of(records: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(records, columns=list(COLUMNS))
    frame["x"] = pd.array([r["x"] for r in records], dtype="Int64")
    frame["d"] = pd.array([r["d"] for r in records], dtype="float64")
    frame["b"] = pd.array([r["b"] for r in records], dtype="boolean")
    frame["t"] = pd.to_datetime(pd.Series([r["t"] for r in records], dtype=object), utc=True,
                                format="ISO8601")
    return frame


# --- a direct three-valued interpretation of the SQL tree (the reference) ---

def _value(node: exp.Expression, row: dict, col: str | None) -> object:
    if isinstance(node, exp.Column):
        value = row[node.name]
        return _stamp(value) if value is not None and COLUMNS[node.name] == "timestamp" \
            else value
    if isinstance(node, exp.Neg):
        return -_value(node.this, row, col)
    if isinstance(node, exp.Boolean):
        return node.this
    if node.is_string:
        return _stamp(node.this) if col == "t" else node.this
    return float(node.this) if col == "d" or "." in node.this else int(node.this)


def _stamp(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _column_of(node: exp.Expression) -> str:
    return next(node.find_all(exp.Column)).name


def reference(node: exp.Expression, row: dict) -> bool | None:
    if isinstance(node, exp.Paren):
        return reference(node.this, row)
    if isinstance(node, exp.Not):
        inner = reference(node.this, row)
        return None if inner is None else not inner
    if isinstance(node, exp.And):
        parts = [reference(node.this, row), reference(node.expression, row)]
        return False if False in parts else (None if None in parts else True)
    if isinstance(node, exp.Or):
        parts = [reference(node.this, row), reference(node.expression, row)]
        return True if True in parts else (None if None in parts else False)
    if isinstance(node, exp.Boolean):
        return node.this
    if isinstance(node, exp.Column):
        return row[node.name]
    col = _column_of(node)
    if isinstance(node, exp.Is):
        value = row[col]
        if isinstance(node.expression, exp.Null):
            return value is None
        return value is node.expression.this
    if isinstance(node, exp.Between):
        v, lo, hi = (_value(node.args[k], row, col) for k in ("this", "low", "high"))
        return None if v is None else lo <= v <= hi
    if isinstance(node, exp.In):
        v = _value(node.this, row, col)
        return None if v is None else any(v == _value(e, row, col) for e in node.expressions)
    left, right = _value(node.this, row, col), _value(node.expression, row, col)
    if left is None or right is None:
        return None
    ops = {exp.EQ: left == right, exp.NEQ: left != right, exp.LT: left < right,
           exp.LTE: left <= right, exp.GT: left > right, exp.GTE: left >= right}
    return ops[type(node)]


@settings(**SETTINGS)
@given(conditions(), rows())
def test_parsed_form_agrees_with_the_sql_tree(text: str, records: list[dict]) -> None:
    pred = parse_predicate(text, COLUMNS)
    tree = sqlglot.parse_one(text)
    expected = [reference(tree, r) is True for r in records]
    assert list(pred.evaluate(frame_of(records))) == expected, pred.to_sql()


@settings(**SETTINGS)
@given(conditions(), rows())
def test_vectorised_equals_row_at_a_time(text: str, records: list[dict]) -> None:
    pred = parse_predicate(text, COLUMNS)
    frame = frame_of(records)
    by_row = [pred.evaluate_row(r) is True for r in frame.to_dict("records")]
    assert list(pred.evaluate(frame)) == by_row


@settings(**SETTINGS)
@given(conditions())
def test_to_sql_round_trips(text: str) -> None:
    pred = parse_predicate(text, COLUMNS)
    again = parse_predicate(pred.to_sql(), COLUMNS)
    assert again == pred and hash(again) == hash(pred), (text, pred.to_sql(), again.to_sql())


@settings(**SETTINGS)
@given(conditions(2), conditions(2), conditions(2), rows())
def test_and_or_keep_the_rows_that_pass(a: str, b: str, c: str, records: list[dict]) -> None:
    p, q, r = (parse_predicate(t, COLUMNS) for t in (a, b, c))
    frame = frame_of(records)
    mp, mq, mr = p.evaluate(frame), q.evaluate(frame), r.evaluate(frame)
    assert list(conjoin(p, q).evaluate(frame)) == list(mp & mq)
    assert list(disjoin(p, q).evaluate(frame)) == list(mp | mq)
    assert list(disjoin(conjoin(p, q), r).evaluate(frame)) == list((mp & mq) | mr)
    assert list(conjoin(disjoin(p, r), q, r).evaluate(frame)) == list((mp | mr) & mq & mr)
    assert disjoin(p, q) == disjoin(q, p) and conjoin(p, q, r) == conjoin(r, q, p)


@settings(**SETTINGS)
@given(conditions(2), conditions(2), rows())
def test_implies_is_sound(a: str, b: str, records: list[dict]) -> None:
    p, q = parse_predicate(a, COLUMNS), parse_predicate(b, COLUMNS)
    frame = frame_of(records)
    for left, right in ((p, q), (q, p), (p, disjoin(p, q)), (conjoin(p, q), q),
                        (conjoin(p, q), disjoin(p, q))):
        if implies(left, right):
            lm, rm = left.evaluate(frame), right.evaluate(frame)
            assert not (lm & ~rm).any(), (left.to_sql(), right.to_sql())

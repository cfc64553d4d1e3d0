"""SQL front end: normal form, and clear errors for everything outside the class."""

from __future__ import annotations

import pytest

from engine.errors import RepriseError
from engine.spj import SpjError, analyze
from engine.spj.model import Aggregate, Atom, Attr
from engine.spj.parse import parse

ST = {"S": ["A", "B", "C"], "T": ["D", "E"]}


def test_normal_form_strict_comparisons() -> None:
    q = parse("SELECT DISTINCT S.A FROM S, T WHERE S.B > T.D AND S.A >= 10 AND T.E <= 4 "
              "AND S.C BETWEEN 1 AND 5 AND S.C <= T.E", ST)
    assert q.distinct and q.semantics == "set"
    assert set(q.atoms) == {
        Atom(Attr("T", "D"), "<", Attr("S", "B")),
        Atom(9, "<", Attr("S", "A")),
        Atom(Attr("T", "E"), "<", 5),
        Atom(0, "<", Attr("S", "C")),
        Atom(Attr("S", "C"), "<", 6),
        Atom(Attr("S", "C"), "<=", Attr("T", "E")),
    }


def test_aliases_self_joins_joins_and_aggregates() -> None:
    q = parse("SELECT s1.A, COUNT(*), COUNT(DISTINCT s2.B), MEDIAN(s2.C) FROM S s1 "
              "JOIN S AS s2 ON s1.A = s2.A WHERE s1.B < -3 GROUP BY s1.A", ST)
    assert q.occurrences == {"s1": "S", "s2": "S"} and q.has_self_join
    assert q.aggregates == (Aggregate("COUNT", None), Aggregate("COUNT_DISTINCT", Attr("s2", "B")),
                            Aggregate("MEDIAN", Attr("s2", "C")))
    assert Atom(Attr("s1", "B"), "<", -3) in q.atoms


@pytest.mark.parametrize(("sql", "needle"), [
    ("SELECT A FROM S WHERE A = 1 OR B = 2", "OR"),
    ("SELECT A FROM S WHERE NOT A = 1", "NOT"),
    ("SELECT A FROM S WHERE A <> 3", "NEQ"),
    ("SELECT A FROM S WHERE A IN (1, 2)", "IN"),
    ("SELECT A FROM S WHERE A + 1 < B", "ADD"),
    ("SELECT A FROM S WHERE A < ABS(B)", "ABS"),
    ("SELECT A FROM S ORDER BY A", "ORDER"),
    ("SELECT A FROM S LIMIT 3", "LIMIT"),
    ("SELECT A, COUNT(*) FROM S GROUP BY A HAVING COUNT(*) > 1", "HAVING"),
    ("SELECT A FROM S LEFT JOIN T ON A = D", "JOIN"),
    ("SELECT A FROM (SELECT A FROM S)", "FROM item"),
    ("SELECT A FROM S UNION SELECT D FROM T", "UNION"),
    ("SELECT A + 1 FROM S", "SELECT item"),
    ("SELECT A FROM S WHERE EXISTS (SELECT D FROM T)", "EXISTS"),
])
def test_unsupported_sql_names_construct_and_position(sql: str, needle: str) -> None:
    with pytest.raises(SpjError) as err:
        analyze(sql, ST)
    msg = str(err.value)
    assert needle in msg and ("line 1, column" in msg or "'" in msg), msg


def test_errors_are_spj_errors_with_positions() -> None:
    with pytest.raises(SpjError, match=r"OR .*line 1, column 27"):
        parse("SELECT A FROM S WHERE A = 1 OR B = 2", ST)
    with pytest.raises(SpjError, match="syntax error at line 1"):
        parse("SELECT A FROM WHERE", ST)


@pytest.mark.parametrize(("sql", "needle"), [
    ("SELECT A FROM Q", "unknown stream 'Q'"),
    ("SELECT X.A FROM S", "unknown stream or alias 'X'"),
    ("SELECT Z FROM S", "unknown column 'Z'"),
    ("SELECT S.A FROM S WHERE S.F = 1", "unknown column 'S.F'"),
    ("SELECT A FROM S, S", "duplicate alias"),
    ("SELECT s1.A FROM S s1, S s2 WHERE A = 1", "ambiguous column 'A'"),
    ("SELECT A, COUNT(*) FROM S", "GROUP BY"),
])
def test_unknown_names(sql: str, needle: str) -> None:
    with pytest.raises(SpjError, match=needle):
        parse(sql, ST)


@pytest.mark.parametrize(("sql", "needle"), [
    ("SELECT A FROM U WHERE A < 2.5", "non-integer constant 2.5"),
    ("SELECT A FROM U WHERE A = 'x'", "non-integer constant 'x'"),
    ("SELECT A FROM U WHERE N < 3", "non-integer comparison"),
    ("SELECT A FROM U WHERE N < M", "non-integer comparison"),
    ("SELECT A FROM U WHERE N = A", "non-integer comparison"),
    ("SELECT SUM(N) FROM U", "SUM needs an integer"),
])
def test_non_integer_comparisons(sql: str, needle: str) -> None:
    typed = {"U": {"A": "int", "N": "string", "M": "double"}}
    with pytest.raises(SpjError, match=needle):
        parse(sql, typed)


def test_typed_equality_between_non_integers_is_allowed_but_unbounded() -> None:
    typed = {"U": {"A": "int", "N": "string"}, "V": {"N": "string"}}
    a = analyze("SELECT DISTINCT U.A FROM U, V WHERE U.N = V.N AND U.A = 1", typed)
    assert not a.bounded and {v.condition for v in a.violations} == {"C2"}


def test_timestamp_rules() -> None:
    sch = {"S": ["A", "ts"], "T": ["B", "ts"]}
    ts = {"S": "ts", "T": "ts"}
    with pytest.raises(SpjError, match="timestamp with an integer"):
        parse("SELECT S.A FROM S, T WHERE S.ts < T.B", sch, ts)
    with pytest.raises(SpjError, match="may not be projected"):
        parse("SELECT S.ts FROM S", sch, ts)
    with pytest.raises(SpjError, match="no column 'time'"):
        parse("SELECT S.A FROM S", sch, {"S": "time"})
    parse("SELECT S.A FROM S, T WHERE S.ts > T.ts AND S.ts < 100", sch, ts)


def test_to_json_shape() -> None:
    j = analyze("SELECT S.A FROM S, T WHERE S.B < T.D AND S.A = 10", ST).to_json()
    assert j["bounded"] is False and j["semantics"] == "bag"
    assert {"condition", "explanation"} <= set(j["violations"][0])
    assert j["witness"]["stream"] in ("S", "T")
    ok = analyze("SELECT DISTINCT S.A FROM S, T WHERE S.B < T.D AND S.A = 10", ST).to_json()
    assert ok["bounded"] is True and ok["violations"] == [] and ok["synopsis"]["units"] > 0


# -- robustness: only SpjError (a RepriseError), with a position, for any input ------------------
@pytest.mark.parametrize(("sql", "needle"), [
    ('"', "line 1"), ("/*", "unterminated"), ("SELECT S.A FROM S WHERE S.A = 'x", "Missing '"),
    ("SELECT S.A FROM S WHERE " + "(" * 60 + "S.A = 1" + ")" * 60, "nesting deeper than 25"),
    ("SELECT S.A FROM S WHERE S.A < " + "NOT " * 200 + "1", "nesting deeper than 25"),
    ("SELECT S.A FROM S WHERE S.A < 1" + "::int" * 800, "nested too deeply to print"),
    ("SELECT S.A FROM S WHERE S.A < " + ".".join(["S"] * 800), "nested too deeply to print"),
    ("SELECT S.A FROM S WHERE S.A < " + "INTERVAL " * 300 + "1", "nested too deeply to parse"),
    ("", "syntax error"),
])
def test_malformed_input_raises_spj_error(sql: str, needle: str) -> None:
    with pytest.raises(SpjError, match=needle) as info:
        analyze(sql, ST)
    assert isinstance(info.value, RepriseError) and len(str(info.value)) < 400


def test_long_and_chains_are_analysed() -> None:
    conds = " AND ".join(["S.B < T.D", "S.A = 10", "T.E > 3"] * 700)
    a = analyze(f"SELECT DISTINCT S.A FROM S, T WHERE {conds}", ST)
    assert a.bounded and len(set(a.query.atoms)) == 3


@pytest.mark.parametrize(("sql", "bounded", "note"), [
    ("SELECT 1 FROM S, T WHERE S.A = T.D AND S.A > 10 AND T.D < 20", True, "number of result"),
    ("SELECT 1 FROM S, T WHERE S.B < T.D AND S.A = 10", False, "number of result"),
    ("SELECT DISTINCT 1 FROM S, T WHERE S.B < T.D AND S.A = 10", True, "some result exists"),
    ("SELECT DISTINCT 'hit', TRUE, -2 FROM S, T WHERE S.B < T.D AND S.C < T.E", False, "exists"),
])
def test_select_lists_without_columns_get_a_verdict(sql: str, bounded: bool, note: str) -> None:
    a = analyze(sql, ST)
    assert a.query.projection == () and a.bounded is bounded
    assert any(note in n for n in a.notes)
    assert a.violations if not bounded else a.synopsis is not None

"""The SPJ front end raises only the project's error class, on any input, and never hangs.

Seeded mutations of valid queries (truncation, inserted quotes, comments, parentheses and random
tokens, deleted spans, deep nesting, long AND chains, unary and arithmetic chains) go through
``analyze``; any exception must be an :class:`SpjError` (a :class:`RepriseError`) with a message.
A SIGALRM guard fails an input that runs for more than 5 s (a hang, not a speed requirement).
"""

from __future__ import annotations

import random
import signal
from collections.abc import Iterator

import pytest

from engine.errors import RepriseError
from engine.spj import SpjError, analyze

SCHEMAS = {"S": {"A": "int", "B": "int", "C": "int", "ts": "timestamp", "N": "string"},
           "T": {"D": "int", "E": "int", "ts": "timestamp"}}
STAMPS = {"S": "ts", "T": "ts"}
VALID = [
    "SELECT S.A FROM S, T WHERE S.A = T.D AND S.A > 10 AND T.D < 20",
    "SELECT DISTINCT S.A FROM S, T WHERE S.B < T.D AND S.A = 10",
    "SELECT DISTINCT s1.A FROM S s1, S AS s2 WHERE s1.A = 10 AND s1.A = s2.A AND s1.B = s2.B",
    "SELECT S.A, COUNT(*), SUM(S.B), MEDIAN(T.E) FROM S JOIN T ON S.A = T.D "
    "WHERE S.A BETWEEN 9 AND 12 GROUP BY S.A",
    "SELECT MAX(S.B), COUNT(DISTINCT S.C) FROM S, T WHERE S.B <= T.D AND S.C >= -3",
    "SELECT 1 FROM S, T WHERE (S.A = 1) AND ((T.D > S.B))",
    "SELECT S.* FROM S WHERE S.N = 'x'",
]
TIMED = [
    "SELECT S.A FROM S, T WHERE S.ts > T.ts AND S.B < T.D AND S.A = 10",
    "SELECT DISTINCT S.A FROM S, T WHERE S.ts < T.ts AND S.A = 1",
]
TOKENS = ["SELECT", "FROM", "WHERE", "AND", "OR", "NOT", "=", "<", ">", "<=", ">=", "<>", "!=",
          ",", ".", "*", "(", ")", "[", "]", "'", '"', "`", "/*", "*/", "--", ";", "\n", "0",
          "-7", "1e9", "99999999999999999999999", "0x1F", "NULL", "TRUE", "BETWEEN", "GROUP BY",
          "JOIN", "ON", "USING", "COUNT(", "DISTINCT", "AS", "S", "T", "S.A", "T.D", "s1.B",
          "CASE WHEN", "END", "IN", "LIKE", "||", "+", "-", "/", "%", "$1", "?", ":x", "@",
          "\\", "é", "\x00", "UNION", "WITH", "LIMIT", "OVER", "{", "}"]


def mutate(rng: random.Random, sql: str) -> str:
    """One random mutation of ``sql``."""
    at = rng.randint(0, len(sql))
    kind = rng.randrange(9)
    if kind == 0:
        return sql[:at]
    if kind == 1:
        return sql[:at] + rng.choice(["'", '"', "`", "/*", "--", "*/", "[", "]"]) + sql[at:]
    if kind == 2:
        return sql[:at] + rng.choice("()") * rng.randint(1, 4) + sql[at:]
    if kind == 3:
        return sql[:at] + " " + " ".join(rng.choices(TOKENS, k=rng.randint(1, 4))) + " " + \
            sql[at:]
    if kind == 4:
        return sql[:at] + sql[at + rng.randint(1, 12):]
    if kind == 5:  # deep nesting around the condition or a term
        depth = rng.choice([rng.randint(1, 30), rng.randint(30, 400)])
        cut = sql.find(" WHERE ")
        if cut < 0:
            return sql + " WHERE " + "(" * depth + "S.A = 1" + ")" * depth
        return sql[:cut + 7] + "(" * depth + sql[cut + 7:] + ")" * depth
    if kind == 6:  # long AND chain
        n = rng.randint(900, 1600) if rng.random() < 0.15 else rng.randint(2, 50)
        conds = " AND ".join(rng.choice(["S.A = 1", "S.B < T.D", "S.A > -3", "T.E <= 4"])
                             for _ in range(n))
        return sql + (" AND " if " WHERE " in sql else " WHERE ") + conds
    if kind == 7:  # unary or arithmetic chains
        n = rng.randint(1000, 2000) if rng.random() < 0.1 else rng.randint(30, 300)
        chain = rng.choice(["- " * n + "1", " - ".join(["1"] * n), "NOT " * n + "S.A = 1",
                            "+".join(["S.A"] * n), "1" + "::int" * n, "S.A" + "[1]" * n,
                            ".".join(["S"] * n), "1" + " IS NULL" * n, "INTERVAL " * n + "1"])
        return sql + (" AND " if " WHERE " in sql else " WHERE ") + "S.A < " + chain
    return "".join(rng.sample(sql, len(sql))) if rng.random() < 0.2 else sql[::-1]


def inputs(seed: int, n: int) -> Iterator[tuple[str, bool]]:
    """(query, application time?) pairs: 1–3 mutations of a valid query."""
    rng = random.Random(seed)
    for _ in range(n):
        timed = rng.random() < 0.25
        sql = rng.choice(TIMED if timed else VALID)
        for _ in range(rng.choice((1, 1, 2, 3))):
            sql = mutate(rng, sql)
        yield sql, timed


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang


@pytest.mark.parametrize("seed", range(6))
def test_front_end_raises_only_spj_errors(seed: int) -> None:
    previous = signal.signal(signal.SIGALRM, _alarm)
    outcomes = {"bounded": 0, "unbounded": 0, "error": 0}
    try:
        for sql, timed in inputs(seed, 500):
            signal.setitimer(signal.ITIMER_REAL, 5.0)
            try:
                a = analyze(sql, SCHEMAS, STAMPS if timed else None)
                a.to_json()  # the witness search runs too, as the CLI prints it
                outcomes["bounded" if a.bounded else "unbounded"] += 1
            except Hang:
                pytest.fail(f"analyze ran over 5 s on {sql[:300]!r}")
            except SpjError as err:
                assert isinstance(err, RepriseError) and 0 < len(str(err)) < 2000, sql[:200]
                outcomes["error"] += 1
            except Exception as err:
                pytest.fail(f"{type(err).__name__} escaped on {sql[:300]!r}: {err}")
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert min(outcomes.values()) > 0, outcomes  # mutations keep some queries valid


# -- every query of the supported class gets a verdict -------------------------------------------
INTS = {"S": ("A", "B", "C"), "T": ("D", "E")}


def class_query(rng: random.Random) -> str:
    """A random query of the class in engine/spj/README.md (``Supported SQL``)."""
    streams = rng.choices(("S", "T"), k=rng.choice((1, 2, 2, 3)))
    aliases = [f"{s.lower()}{i}" for i, s in enumerate(streams)]
    ints = [f"{a}.{c}" for s, a in zip(streams, aliases, strict=True) for c in INTS[s]]
    stamps = [f"{a}.ts" for a in aliases]
    names = [f"{a}.N" for s, a in zip(streams, aliases, strict=True) if s == "S"]
    conds = []
    for _ in range(rng.randint(0, 5)):
        form = rng.randrange(5)
        op = rng.choice(("=", "<", ">", "<=", ">="))
        if form == 0:
            conds.append(f"{rng.choice(ints)} {op} {rng.choice(ints)}")
        elif form == 1:
            conds.append(f"{rng.choice(ints + stamps)} {op} {rng.randint(-3, 12)}")
        elif form == 2:
            conds.append(f"{rng.choice(ints)} BETWEEN {rng.randint(-2, 5)} AND {rng.randint(3, 9)}")
        elif form == 3:
            conds.append(f"{rng.choice(stamps)} {op} {rng.choice(stamps)}")
        elif len(names) > 1:
            conds.append(f"{names[0]} = {names[-1]}")
    distinct = rng.random() < 0.5
    if rng.random() < 0.3:  # aggregates
        group = rng.sample(ints + names, rng.randint(0, 1))
        aggs = [rng.choice(["COUNT(*)", f"COUNT({rng.choice(ints + names)})",
                            f"SUM({rng.choice(ints)})", f"AVG({rng.choice(ints)})",
                            f"MIN({rng.choice(ints + names)})", f"MAX({rng.choice(ints)})",
                            f"MEDIAN({rng.choice(ints)})", f"COUNT(DISTINCT {rng.choice(ints)})"])
                for _ in range(rng.randint(1, 2))]
        select = ", ".join(group + aggs + rng.sample(["1", "'k'"], rng.randint(0, 1)))
        tail = f" GROUP BY {group[0]}" if group else ""
    else:
        items = rng.sample(ints + names, rng.randint(0, 2)) + rng.sample(["1", "'k'", "TRUE"],
                                                                         rng.randint(0, 1))
        select = ", ".join(items) or "2"
        tail = ""
    froms = [f"{s} {a}" if rng.random() < 0.5 else f"{s} AS {a}"
             for s, a in zip(streams, aliases, strict=True)]
    if len(froms) > 1 and conds and rng.random() < 0.4:
        from_sql = f"{froms[0]} JOIN {froms[1]} ON {conds.pop()}" + "".join(
            f", {f}" for f in froms[2:])
    else:
        from_sql = ", ".join(froms)
    where = f" WHERE {' AND '.join(conds)}" if conds else ""
    return f"SELECT {'DISTINCT ' if distinct else ''}{select} FROM {from_sql}{where}{tail}"


@pytest.mark.parametrize("seed", range(3))
def test_every_query_of_the_class_gets_a_verdict(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(150):
        sql, timed = class_query(rng), rng.random() < 0.5
        a = analyze(sql, SCHEMAS, STAMPS if timed else None)
        assert a.violations or a.bounded, sql
        assert a.to_json()["semantics"] in ("bag", "set")

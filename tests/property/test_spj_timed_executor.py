"""Application time: the down-set engine equals the naive reference after every batch, whatever
the batch plan, on bag queries certified by rules G1–G3 and set queries certified by rule E-b;
its state does not grow."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from engine.spj import SpjExecutor, analyze, reference

SCHEMAS = {"S": ("A", "B", "I"), "T": ("D", "E", "J"), "U": ("C", "K")}
STAMPS = {"S": "I", "T": "J", "U": "K"}
CONSTANT_POOLS = ((), (10,), (10, 20), (0, 3))


def random_query(rng: random.Random) -> str:
    """A bag or set query over 2–3 streams with timestamp order atoms and integer atoms."""
    streams = rng.sample(sorted(SCHEMAS), rng.choice((2, 2, 3)))
    ints = [f"{s}.{c}" for s in streams for c in SCHEMAS[s] if c != STAMPS[s]]
    stamps = [f"{s}.{STAMPS[s]}" for s in streams]
    consts = rng.choice(CONSTANT_POOLS)
    atoms = []
    for _ in range(rng.randint(1, 3)):
        x, y = rng.sample(stamps, 2)
        atoms.append(f"{x} {rng.choice(('<', '<', '>', '=', '<='))} {y}")
    if consts:
        for x in rng.sample(ints, rng.randint(0, 2)):
            atoms.append(f"{x} BETWEEN {consts[0]} AND {consts[-1]}")
    for _ in range(rng.randint(0, 3)):
        x = rng.choice(ints)
        if consts and rng.random() < 0.5:
            atoms.append(f"{x} {rng.choice(('<', '=', '>'))} {rng.choice(consts)}")
        else:
            y = rng.choice([a for a in ints if a != x])
            atoms.append(f"{x} {rng.choice(('<', '=', '<='))} {y}")
    select = ", ".join(rng.sample(ints, rng.randint(0, 2))) or "1"
    if rng.random() < 0.5:
        select = "DISTINCT " + select
    return f"SELECT {select} FROM {', '.join(streams)} WHERE {' AND '.join(atoms)}"


def random_events(rng: random.Random, n: int, consts: tuple[int, ...]) -> list[tuple[str, dict]]:
    """Events in timestamp order (several per timestamp), values around the constants."""
    lo, hi = (consts[0] - 2, consts[-1] + 2) if consts else (-2, 2)
    ts, out = 0, []
    for _ in range(n):
        ts += rng.choice((0, 0, 1, 2))
        s = rng.choice(sorted(SCHEMAS))
        row = {c: ts if c == STAMPS[s] else
               rng.randint(lo, hi) if rng.random() < 0.8 else rng.randint(-40, 40)
               for c in SCHEMAS[s]}
        out.append((s, row))
    return out


def replay(ex: SpjExecutor, events: list, cuts: list[int]) -> bytes:
    """Bag: summed counts; set: the union, no row twice; equal to the reference each batch."""
    state, total, done = ex.init(), Counter(), 0
    for cut in [*cuts, len(events)]:
        state, rows = ex.step(state, events[done:cut])
        done = cut
        for r in rows:
            if ex.kind == "bag":
                assert r["count"] > 0
                total[tuple(r[c] for c in ex.output_columns[:-1])] += r["count"]
            else:
                row = tuple(r[c] for c in ex.output_columns)
                assert row not in total, "a set row was emitted twice"
                total[row] = 1
        streams = {s: [r for n, r in events[:done] if n == s] for s in SCHEMAS}
        want = reference(ex.analysis.sql, SCHEMAS, streams, STAMPS)
        got = total if ex.kind == "bag" else set(total)
        assert got == want, (ex.analysis.sql, done)
        assert ex.size(state) <= ex.bound
    return ex.encode(state)


@pytest.mark.parametrize("seed", range(4))
def test_down_set_engine_equals_reference(seed: int) -> None:
    rng = random.Random(seed)
    ran = Counter()
    while min(ran["bag"], ran["set"]) < 15:
        sql = random_query(rng)
        a = analyze(sql, SCHEMAS, STAMPS)
        if not a.bounded:
            continue
        ex = SpjExecutor(sql, SCHEMAS, STAMPS)
        if ex.engine != "down-sets" or ran[ex.kind] >= 15:
            continue
        ran[ex.kind] += 1
        consts = a.verdict.spj.constants if a.verdict.spj else ()
        events = random_events(rng, rng.randint(0, 30), consts)
        plans = [sorted(rng.choices(range(len(events) + 1), k=rng.randint(0, 5)))
                 for _ in range(2)]
        first = replay(ex, events, plans[0])
        assert first == replay(SpjExecutor(sql, SCHEMAS, STAMPS), events, plans[1])
        assert ex.encode(ex.decode(first)) == first


PLATEAU = [
    "SELECT S.A FROM S, T WHERE S.I < T.J AND S.A BETWEEN 0 AND 3",
    "SELECT T.D, U.C FROM S, T, U WHERE S.I > T.J AND S.I > U.K AND T.D = U.C AND T.D < 3 "
    "AND U.C > 0",
    "SELECT 1 FROM S, T, U WHERE S.I > T.J AND T.J > U.K AND S.A = T.D AND T.D BETWEEN 0 AND 3",
    "SELECT DISTINCT S.A FROM S, T WHERE S.I > T.J AND S.B < T.D AND S.A = 1",
    "SELECT DISTINCT T.D FROM S, T, U WHERE S.I > T.J AND T.J > U.K AND S.B < U.C AND T.E < U.C "
    "AND T.D BETWEEN 0 AND 3",
]


@pytest.mark.parametrize("sql", PLATEAU)
def test_down_set_state_does_not_grow(sql: str) -> None:
    ex = SpjExecutor(sql, SCHEMAS, STAMPS)
    assert ex.engine == "down-sets"
    rng = random.Random(len(sql))
    events = random_events(rng, 20_000, (0, 3))
    state, sizes = ex.init(), []
    for at in range(0, 20_000, 2_000):
        state, _ = ex.step(state, events[at:at + 2_000])
        sizes.append(ex.size(state))
    assert 0 < sizes[2] == sizes[-1] <= ex.bound

"""Set self-joins per derived LTO query (engine/spj/pieces.py): the union of the reduced pieces
equals the naive reference after every batch, its encoding ignores the batch plan, and its
state stays within the bound and does not grow.

The executor uses this engine only for set self-joins that Fig. 2 rejects after removing
redundant occurrences from the whole query but that are bounded per derived LTO query; random
search finds such queries rarely, so the engine is run here directly on bounded set self-joins
of any kind (the union is exact for all of them)."""

from __future__ import annotations

import random

import pytest

from engine.spj import analyze, reference
from engine.spj.codec import PiecesFormat
from engine.spj.pieces import PieceEngine

SCHEMAS = {"S": ["A", "B"]}
OPS = ("<", "=", "<=", ">")


def random_query(rng: random.Random) -> tuple[str, tuple[int, ...]]:
    attrs = [f"{o}.{c}" for o in ("S1", "S2") for c in "AB"]
    consts = rng.choice(((10,), (0, 3)))
    atoms = []
    for _ in range(rng.randint(1, 4)):
        x = rng.choice(attrs)
        if rng.random() < 0.4:
            atoms.append(f"{x} {rng.choice(OPS)} {rng.choice(consts)}")
        else:
            atoms.append(f"{x} {rng.choice(OPS)} {rng.choice([a for a in attrs if a != x])}")
    select = rng.choice([*attrs, "1"])
    return f"SELECT DISTINCT {select} FROM S S1, S S2 WHERE {' AND '.join(atoms)}", consts


def events_for(rng: random.Random, consts: tuple[int, ...], n: int) -> list[tuple[str, dict]]:
    lo, hi = consts[0] - 2, consts[-1] + 2
    return [("S", {"A": rng.randint(lo, hi), "B": rng.randint(lo, hi) if rng.random() < 0.8
                   else rng.randint(-30, 30)}) for _ in range(n)]


def replay(sql: str, engine: PieceEngine, events: list, cuts: list[int]) -> bytes:
    a = analyze(sql, SCHEMAS)
    columns = [str(o) for o in a.query.output]
    fmt = PiecesFormat("test", engine, sql)
    state, seen, done = engine.init(), set(), 0
    for cut in [*cuts, len(events)]:
        rows = engine.step(state, events[done:cut], columns, a.query.constants)
        done = cut
        for r in rows:
            row = tuple(r[c] for c in columns)
            assert row not in seen
            seen.add(row)
        assert seen == reference(sql, SCHEMAS, {"S": [r for _, r in events[:done]]}), sql
        assert engine.size(state) <= engine.units
        state = fmt.decode(fmt.encode(state))  # the state survives its encoding
    return fmt.encode(state)


@pytest.mark.parametrize("seed", range(2))
def test_union_of_reduced_pieces_equals_reference(seed: int) -> None:
    rng = random.Random(seed)
    ran = 0
    while ran < 15:
        sql, consts = random_query(rng)
        a = analyze(sql, SCHEMAS)
        if not a.bounded or a.verdict.spj is None or len(a.verdict.spj.occs) < 2:
            continue
        ran += 1
        engine = PieceEngine(a.query, a.verdict.spj)
        events = events_for(rng, consts, rng.randint(0, 25))
        plans = [sorted(rng.choices(range(len(events) + 1), k=rng.randint(0, 4)))
                 for _ in range(2)]
        assert replay(sql, engine, events, plans[0]) == \
            replay(sql, PieceEngine(a.query, a.verdict.spj), events, plans[1])


def test_pieces_state_does_not_grow() -> None:
    sql = "SELECT DISTINCT S1.A FROM S S1, S S2 WHERE S1.A = 10 AND S1.B < S2.B"
    a = analyze(sql, SCHEMAS)
    engine = PieceEngine(a.query, a.verdict.spj)
    rng = random.Random(5)
    events = events_for(rng, (10,), 20_000)
    state, sizes = engine.init(), []
    for at in range(0, 20_000, 2_000):
        engine.step(state, events[at:at + 2_000], ["S1.A"], ())
        sizes.append(engine.size(state))
    assert 0 < sizes[2] == sizes[-1] <= engine.units

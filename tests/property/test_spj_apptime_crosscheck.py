"""Application time: the analyser (Fig. 2 on merged streams and down-sets) agrees with the brute
force over all derived LTO queries, in bag (rules G1–G3) and set (rules E-a, E-b) semantics."""

from __future__ import annotations

import random

import pytest

from engine.spj import analyze
from engine.spj.apptime import apptime_brute_force

SCHEMAS = {"S": ("A", "B", "I"), "T": ("D", "E", "J"), "U": ("C", "K")}
STAMPS = {"S": "I", "T": "J", "U": "K"}
CONSTANT_POOLS = ((), (10,), (10, 20), (0, 3))


def random_query(rng: random.Random) -> str:
    """2–3 streams; timestamp order atoms (<, =, >, <=), integer atoms as in the Arasu
    cross-check, 0–1 projected attribute, bag or set."""
    streams = rng.sample(sorted(SCHEMAS), rng.choice((2, 2, 3)))
    ints = [f"{s}.{c}" for s in streams for c in SCHEMAS[s] if c != STAMPS[s]]
    stamps = [f"{s}.{STAMPS[s]}" for s in streams]
    consts = rng.choice(CONSTANT_POOLS)
    atoms = []
    for _ in range(rng.randint(0, 2)):
        x, y = rng.sample(stamps, 2)
        atoms.append(f"{x} {rng.choice(('<', '<', '>', '=', '<='))} {y}")
    for _ in range(rng.randint(1, 4)):
        x = rng.choice(ints)
        if consts and rng.random() < 0.45:
            atoms.append(f"{x} {rng.choice(('<', '=', '>'))} {rng.choice(consts)}")
        else:
            y = rng.choice([a for a in ints if a != x])
            atoms.append(f"{x} {rng.choice(('<', '<', '=', '<='))} {y}")
    select = rng.choice([*ints, "1", "1"])
    distinct = "DISTINCT " if rng.random() < 0.5 else ""
    return f"SELECT {distinct}{select} FROM {', '.join(streams)} WHERE {' AND '.join(atoms)}"


@pytest.mark.parametrize("seed", range(4))
def test_analyser_agrees_with_brute_force_under_application_time(seed: int) -> None:
    rng = random.Random(seed)
    seen = {(d, b): 0 for d in (False, True) for b in (False, True)}
    for _ in range(250):
        sql = random_query(rng)
        a = analyze(sql, SCHEMAS, STAMPS)
        assert a.bounded == apptime_brute_force(a.query), (sql, a.violations)
        seen[(a.query.distinct, a.bounded)] += 1
    assert min(seen.values()) > 10, seen  # bag and set, bounded and not, all represented


def test_set_query_bounded_only_through_the_earlier_streams_extreme_value() -> None:
    # E-a (timestamps as integers) rejects it: S has MaxRef {S.I} and MinRef {S.B}; under the
    # timestamp order only max T.D of the past T tuples matters (rule E-b)
    sql = "SELECT DISTINCT S.A FROM S, T WHERE S.I > T.J AND S.B < T.D AND S.A = 10"
    a = analyze(sql, SCHEMAS, STAMPS)
    assert a.bounded and a.proof == "sufficient" and any("E-b" in n for n in a.notes)
    assert a.synopsis is not None and a.synopsis.units > 0
    bag = analyze(sql.replace("DISTINCT ", ""), SCHEMAS, STAMPS)
    assert not bag.bounded and {v.condition for v in bag.violations} == {"G2"}
    assert bag.synopsis is None and "synopsis" not in bag.to_json()


def test_set_query_with_two_interface_classes_is_not_certified() -> None:
    sql = ("SELECT DISTINCT S.A FROM S, T WHERE S.I > T.J AND S.B < T.D AND S.A < T.E "
           "AND S.A = 10")
    a = analyze(sql.replace("S.A < T.E AND S.A = 10", "S.B > T.E AND S.A = 10"),
                SCHEMAS, STAMPS)
    assert not a.bounded and "E-b" in {v.condition for v in a.violations}
    assert any("{T}" in v.explanation for v in a.violations if v.condition == "E-b")

"""Fig. 2 (polynomial) agrees with the brute-force check over all derived LTO queries."""

from __future__ import annotations

import random

import pytest

from engine.spj.checker import check
from engine.spj.lto import Spj, brute_force
from engine.spj.model import Atom, Attr

SCHEMAS = {"S": ("A", "B"), "T": ("C", "D"), "U": ("E",)}
CONSTANT_POOLS = ((), (10,), (10, 20), (0, 3))


def random_spj(rng: random.Random) -> Spj:
    """A small random query over 2–3 streams, 1–2 constants, with <, <=, =."""
    streams = rng.sample(sorted(SCHEMAS), rng.choice((2, 2, 3)))
    attrs = [Attr(s, c) for s in streams for c in SCHEMAS[s]]
    consts = rng.choice(CONSTANT_POOLS)
    atoms = []
    for _ in range(rng.randint(1, 5)):
        x = rng.choice(attrs)
        if consts and rng.random() < 0.45:
            k = rng.choice(consts)
            op = rng.choice(("<", "=", ">"))
            atoms.append(Atom(k, "<", x) if op == ">" else Atom(x, op, k))
        else:
            y = rng.choice([a for a in attrs if a != x])
            atoms.append(Atom(x, rng.choice(("<", "<", "=", "<=")), y))
    proj = tuple(rng.sample(attrs, rng.choice((0, 0, 1))))
    used = {t for a in atoms for t in (a.left, a.right) if isinstance(t, Attr)} | set(proj)
    occs = {s: tuple(a for a in attrs if a.occ == s and a in used) for s in streams}
    return Spj(occs, proj, tuple(atoms), rng.random() < 0.5)


@pytest.mark.parametrize("seed", range(6))
def test_fig2_agrees_with_brute_force_lto(seed: int) -> None:
    rng = random.Random(seed)
    verdicts = {True: 0, False: 0}
    for _ in range(1000):
        spj = random_spj(rng)
        fast, slow = not check(spj), not brute_force(spj)
        assert fast == slow, (spj, check(spj), brute_force(spj))
        verdicts[fast] += 1
    assert min(verdicts.values()) > 150  # both verdicts are well represented

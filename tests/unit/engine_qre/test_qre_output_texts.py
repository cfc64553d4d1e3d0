"""The ``value_json`` text of kernel outputs, formatted per column: equal to ``json.dumps``."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from engine.expr.values import UNIT
from engine.qre.dispatch import _texts
from engine.qre.kernel_values import leaf_kinds

EDGE_FLOATS = [0.0, -0.0, 1.0, -1.0, 1e-05, 1e-4, 0.0001, 1e16, 1e15, 123456789012345678.0,
               1.5e300, -2.5e-300, 5e-324, 1.7976931348623157e308, 0.1, 0.30000000000000004,
               math.inf, -math.inf, math.nan, -math.nan, 2.0 ** 53, 1 / 3, 100.0, 12.3456]
EDGE_INTS = [0, 1, -1, 2 ** 63 - 1, -(2 ** 63), 10 ** 15, -42]


def _random_float(rng: random.Random) -> float:
    pick = rng.random()
    if pick < 0.2:
        return rng.choice(EDGE_FLOATS)
    if pick < 0.4:
        return round(rng.uniform(-1000, 1000), rng.randint(0, 6))
    if pick < 0.6:
        return float(np.frombuffer(rng.randbytes(8), np.float64)[0])  # any bit pattern
    return rng.uniform(-1, 1) * 10.0 ** rng.randint(-30, 30)


def _random_int(rng: random.Random) -> int:
    return rng.choice(EDGE_INTS) if rng.random() < 0.2 else rng.randint(-10 ** 6, 10 ** 6)


def _leaf(kind: str, rng: random.Random) -> object:
    if kind == "f":
        return _random_float(rng)
    if kind == "b":
        return rng.random() < 0.5
    return _random_int(rng)


def _value(kind: object, leaves: list) -> object:
    """The Python value of ``kind`` taking its leaves from ``leaves`` in order."""
    if kind == "u":
        return UNIT
    if isinstance(kind, tuple):
        return tuple(_value(k, leaves) for k in kind)
    return leaves.pop(0)


KINDS = ["f", "i", "b", "u", (), ("f",), ("f", "i"), ("i", "f", "b"), (("f", "i"), "u"),
         ("u", ("f", ()), ("b", ("i", "f"))), (("f",), ("f", "f"))]


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_texts_equal_json_dumps_of_the_values(kind):
    rng = random.Random(str(kind))
    leaves = [k for k in leaf_kinds(kind) if k != "u"]
    rows = [[_leaf(k, rng) for k in leaves] for _ in range(500)]
    rows += [[rows[0][j] for j in range(len(leaves))]] * 3  # repeated values
    n_int = sum(k != "f" for k in leaves)
    ints = np.array([[int(v) for v, k in zip(row, leaves, strict=True) if k != "f"]
                     for row in rows], dtype=np.int64).reshape(len(rows), n_int)
    floats = np.array([[v for v, k in zip(row, leaves, strict=True) if k == "f"]
                       for row in rows], dtype=np.float64).reshape(len(rows), len(leaves) - n_int)
    texts = _texts(kind, ints, floats, [0, 0])
    expected = [json.dumps(_value(kind, list(row)), default=str) for row in rows]
    assert texts.dtype == object
    assert texts.tolist() == expected


def test_no_rows_give_no_texts():
    texts = _texts(("f", "i"), np.zeros((0, 1), np.int64), np.zeros((0, 1)), [0, 0])
    assert texts.dtype == object and texts.tolist() == []


def test_negative_zero_and_nans_keep_their_json():
    floats = np.array([[0.0], [-0.0], [np.nan], [-np.nan], [np.inf], [-np.inf]])
    texts = _texts("f", np.zeros((6, 0), np.int64), floats, [0, 0])
    assert texts.tolist() == ["0.0", "-0.0", "NaN", "NaN", "Infinity", "-Infinity"]

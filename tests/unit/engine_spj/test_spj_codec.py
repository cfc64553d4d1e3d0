"""The state format: canonical fixed-width JSON, refusing other queries' states."""

import json

import pytest

from engine.spj import SpjError, SpjExecutor
from engine.spj.codec import canonical

ST = {"S": ["A", "B", "C"], "T": ["D", "E"]}


def test_canonical_sorts_keys_and_pads_integers() -> None:
    text = canonical({"b": [1, -20], "a": None})
    assert json.loads(text) == {"a": None, "b": [1, -20]}
    assert text.index('"a"') < text.index('"b"')
    assert canonical(7) == canonical(-7000).replace("-7000", "    7") and len(canonical(7)) == 20
    with pytest.raises(TypeError):
        canonical({1, 2})


def test_encoding_is_independent_of_insertion_order_and_rejects_other_formats() -> None:
    ex = SpjExecutor("SELECT DISTINCT S.A FROM S, T WHERE S.B < T.D AND S.A = 10", ST)
    one, two = ex.init(), ex.init()
    s, t = ("S", {"A": 10, "B": 1, "C": 0}), ("T", {"D": 5, "E": 0})
    ex.step(one, [s, t])
    ex.step(two, [t])
    ex.step(two, [s])
    assert ex.encode(one) == ex.encode(two)
    doc = json.loads(ex.encode(one))
    doc["format"] = 99
    with pytest.raises(SpjError, match="unknown format"):
        ex.decode(json.dumps(doc).encode())
    doc["format"] = 1
    doc.pop("reps")
    with pytest.raises(SpjError, match="malformed"):
        ex.decode(json.dumps(doc).encode())

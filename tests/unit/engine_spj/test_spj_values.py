"""The executor's value order and column type checks."""

from fractions import Fraction

from engine.spj.parse import parse
from engine.spj.values import fits, order_key, value_kind


def test_order_is_total_over_mixed_values() -> None:
    values = ["b", 3, None, True, Fraction(1, 2), -1.5, "a", False]
    assert sorted(values, key=lambda v: order_key([v])) == \
        [None, False, True, -1.5, Fraction(1, 2), 3, "a", "b"]


def test_fits_rejects_booleans_as_integers_and_non_finite_numbers() -> None:
    assert fits("int", 3) and not fits("int", True) and not fits("int", 3.0)
    assert fits("float", 2) and not fits("float", float("nan")) and not fits("float", "1")
    assert fits("scalar", "x") and fits("scalar", False) and not fits("scalar", float("inf"))


def test_value_kind_follows_the_declared_type_of_non_integer_columns() -> None:
    q = parse("SELECT S.N FROM S", {"S": {"A": "int", "N": "varchar", "X": "double",
                                          "F": "boolean", "O": "blob"}})
    kinds = {c: value_kind(q, "S", c, t) for c, t in
             {"A": "int", "N": "varchar", "X": "double", "F": "boolean", "O": "blob"}.items()}
    assert kinds == {"A": "int", "N": "str", "X": "float", "F": "bool", "O": "scalar"}

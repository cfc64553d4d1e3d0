"""Column values with Spark SQL's null and NaN rules, for the vectorised derived-column evaluator.

A :class:`Values` is a numpy array, a validity mask (False = SQL null) and a kind: ``int``
(int64), ``double`` (float64), ``bool`` or ``string`` (object). The operations below follow Spark
SQL (ANSI mode, Spark 4's default): nulls propagate, ``AND``/``OR`` are three-valued, NaN equals
NaN and is larger than any other double, integer overflow and division by zero are errors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import RepriseError

NUMERIC = ("int", "double")


class DeriveError(RepriseError):
    """A derived expression fails on the data (as it would in Spark SQL's ANSI mode)."""


@dataclass(frozen=True)
class Values:
    """A column: ``data`` (meaningless where not ``valid``), ``valid``, ``kind``."""

    data: np.ndarray
    valid: np.ndarray
    kind: str

    @staticmethod
    def constant(value: object, kind: str, n: int) -> Values:
        """``value`` (None for null) repeated ``n`` times."""
        dtype = {"int": "int64", "double": "float64", "bool": "bool", "string": object}[kind]
        data = np.full(n, 0 if value is None and kind != "string" else value, dtype=dtype)
        return Values(data, np.full(n, value is not None), kind)

    @staticmethod
    def of_series(column: pd.Series, kind: str) -> Values:
        """A recording column as values of catalog ``kind`` (int, double, bool, string)."""
        valid = column.notna().to_numpy()
        if kind == "int":
            return Values(column.fillna(0).to_numpy(dtype="int64"), valid, kind)
        if kind == "double":
            return Values(column.to_numpy(dtype="float64", na_value=np.nan), valid, kind)
        if kind == "bool":
            return Values(np.where(valid, column.to_numpy(dtype=object), False).astype(bool),
                          valid, kind)
        return Values(column.to_numpy(dtype=object), valid, kind)

    def as_double(self) -> Values:
        data = self.data.astype("float64") if self.kind != "double" else self.data
        return Values(data, self.valid, "double")

    def to_series(self, declared: str) -> pd.Series:
        """As the pandas column Spark's Arrow transfer would give for catalog type ``declared``
        (doubles with NaN for null; ints nullable Int64 when they hold nulls; bools object)."""
        if declared == "double":
            return pd.Series(np.where(self.valid, self.as_double().data, np.nan))
        if declared == "int":
            if self.valid.all():
                return pd.Series(self.data.astype("int64"))
            return pd.Series(pd.arrays.IntegerArray(self.data.astype("int64"), ~self.valid))
        if self.valid.all():
            return pd.Series(self.data.astype("bool"))
        return pd.Series(np.where(self.valid, self.data, None).astype(object))


def take(values: Values, mask: np.ndarray, other: Values) -> Values:
    """``values`` where ``mask``, else ``other`` (same kind)."""
    return Values(np.where(mask, values.data, other.data), np.where(mask, values.valid,
                                                                    other.valid), values.kind)


def unify(a: Values, b: Values) -> tuple[Values, Values]:
    """The two operands in one kind (int with double becomes double)."""
    if a.kind == b.kind:
        return a, b
    if {a.kind, b.kind} == {"int", "double"}:
        return a.as_double(), b.as_double()
    raise TypeError(f"{a.kind} with {b.kind}")


def _checked(result: np.ndarray, overflow: np.ndarray, valid: np.ndarray, what: str) -> None:
    if (overflow & valid).any():
        raise DeriveError(f"integer overflow in {what} (Spark SQL's ANSI mode fails too)")


def arithmetic(op: str, a: Values, b: Values) -> Values:
    """``a op b`` for op in ``+ - * / %``."""
    if op == "/":
        a, b = a.as_double(), b.as_double()
    a, b = unify(a, b)
    if a.kind not in NUMERIC:
        raise TypeError(f"{op} on {a.kind}")
    valid = a.valid & b.valid
    x, y = a.data, b.data
    if op in "/%" and ((y == 0) & valid).any():
        raise DeriveError("division by zero (Spark SQL's ANSI mode fails too)")
    with np.errstate(all="ignore"):
        if op == "+":
            out = x + y
            if a.kind == "int":
                _checked(out, ((x ^ out) & (y ^ out)) < 0, valid, "+")
        elif op == "-":
            out = x - y
            if a.kind == "int":
                _checked(out, ((x ^ y) & (x ^ out)) < 0, valid, "-")
        elif op == "*":
            out = x * y
            if a.kind == "int":
                big = np.abs(x.astype("float64") * y.astype("float64")) >= 2.0 ** 63
                _checked(out, big, valid, "*")
        elif op == "/":
            out = x / np.where(valid, y, 1.0)
        else:  # % : the sign of the dividend, as in Java
            out = np.fmod(x, np.where(valid, y, 1))
    return Values(out, valid, a.kind)


def negate(a: Values) -> Values:
    if a.kind == "int" and ((a.data == np.iinfo("int64").min) & a.valid).any():
        raise DeriveError("integer overflow in unary - (Spark SQL's ANSI mode fails too)")
    return Values(-a.data, a.valid, a.kind)


def compare(op: str, a: Values, b: Values) -> Values:
    """``a op b`` for op in ``= <> < <= > >=`` (NaN equals NaN and sorts above every double)."""
    a, b = unify(a, b)
    x, y = a.data, b.data
    if a.kind == "double":
        nx, ny = np.isnan(x), np.isnan(y)
        eq = (x == y) | (nx & ny)
        lt = (x < y) | (~nx & ny)
    else:
        eq = x == y
        lt = x < y if a.kind != "bool" else (~x & y)
    out = {"=": eq, "<>": ~eq, "<": lt, "<=": lt | eq, ">": ~(lt | eq), ">=": ~lt}[op]
    return Values(np.asarray(out, dtype=bool), a.valid & b.valid, "bool")


def logical_and(a: Values, b: Values) -> Values:
    false = (a.valid & ~a.data) | (b.valid & ~b.data)
    return Values(~false & a.data & b.data, false | (a.valid & b.valid), "bool")


def logical_or(a: Values, b: Values) -> Values:
    true = (a.valid & a.data) | (b.valid & b.data)
    return Values(true, true | (a.valid & b.valid), "bool")


def logical_not(a: Values) -> Values:
    return Values(~a.data, a.valid, "bool")


def is_null(a: Values) -> Values:
    return Values(~a.valid, np.ones_like(a.valid), "bool")


def coalesce(items: list[Values]) -> Values:
    out = items[-1]
    for item in reversed(items[:-1]):
        item, out = unify(item, out)
        out = take(item, item.valid, out)
    return out


def choose(cond: Values, then: Values, other: Values) -> Values:
    """``CASE WHEN cond THEN then ELSE other END`` (a null condition takes ``other``)."""
    then, other = unify(then, other)
    return take(then, cond.valid & cond.data, other)


def extreme(items: list[Values], greatest: bool) -> Values:
    """``greatest``/``least``: nulls skipped, null only when all are null."""
    out = items[0]
    for item in items[1:]:
        out, item = unify(out, item)
        better = compare(">" if greatest else "<", item, out).data
        out = take(item, item.valid & (~out.valid | better), out)
    return out


def spark_round(a: Values, scale: int) -> Values:
    """Spark's ``round(x, scale)`` (scale >= 0): HALF_UP on the shortest decimal text of the
    double, as ``BigDecimal(x).setScale(scale, HALF_UP).toDouble`` computes it."""
    if a.kind == "int":
        return a
    x, factor = a.data, 10.0 ** scale
    with np.errstate(all="ignore"):  # in place where it can be: these are whole columns
        y = np.abs(x)
        y *= factor
        k = y + 0.5
        np.floor(k, out=k)
        out = k / factor
        np.copysign(out, x, out=out)
        out[k == 0] = 0.0  # a decimal zero has no sign
        # near a half, or too large for the product to be exact: the decimal way, one by one
        near = np.floor(y)
        np.subtract(y, near, out=near)
        near -= 0.5
        np.abs(near, out=near)
    finite = np.isfinite(x)
    slow = a.valid & finite & ((near < 1e-6) | (y >= 2.0 ** 52))
    if slow.any():
        from decimal import ROUND_HALF_UP, Context, Decimal

        quantum, context = Decimal(1).scaleb(-scale), Context(prec=800)
        out[slow] = [float(Decimal(repr(float(v))).quantize(quantum, ROUND_HALF_UP, context))
                     + 0.0 for v in x[slow]]
    out[~finite] = x[~finite]
    return Values(out, a.valid, "double")

"""Generated ``where:`` conditions in the documented language (docs/guide/select.md):
comparisons of int and double columns with constants on and next to the columns' boundary
values (either side of the operator), ``BETWEEN``, ``IS NULL`` / ``IS NOT NULL``, combined with
``AND``, ``OR`` and ``NOT``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hypothesis import strategies as st

COMPARISONS = ("=", "<>", "<", "<=", ">", ">=")
#: A comparison with the constant on the left: ``c < col`` is ``col > c``.
MIRRORED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def constants(kind: str, bounds: Sequence[float]) -> st.SearchStrategy[str]:
    """SQL constants of a column of catalog type ``kind`` (``int`` or ``double``): each of
    ``bounds`` and its neighbours (one apart for ints, half apart for doubles)."""
    if kind == "int":
        values = sorted({int(b) + d for b in bounds for d in (-1, 0, 1)})
        return st.sampled_from([str(v) for v in values])
    values = sorted({float(b) + d for b in bounds for d in (-0.5, 0.0, 0.5)})
    return st.sampled_from([repr(v) for v in values])


@st.composite
def atoms(draw: st.DrawFn, columns: Mapping[str, str],
          bounds: Mapping[str, Sequence[float]]) -> str:
    """One test of a column of ``columns`` (name -> ``int`` or ``double``) with constants near
    its ``bounds``."""
    column = draw(st.sampled_from(sorted(columns)))
    constant = constants(columns[column], bounds[column])
    form = draw(st.sampled_from(["compare", "mirrored", "between", "null", "not null"]))
    if form == "compare":
        return f"{column} {draw(st.sampled_from(COMPARISONS))} {draw(constant)}"
    if form == "mirrored":
        return f"{draw(constant)} {MIRRORED[draw(st.sampled_from(COMPARISONS))]} {column}"
    if form == "between":
        return f"{column} BETWEEN {draw(constant)} AND {draw(constant)}"
    return f"{column} IS {'NOT ' if form == 'not null' else ''}NULL"


def conditions(columns: Mapping[str, str], bounds: Mapping[str, Sequence[float]],
               leaves: int = 4) -> st.SearchStrategy[str]:
    """``where:`` conditions of at most ``leaves`` tests (:func:`atoms`) joined by ``AND``,
    ``OR`` and ``NOT``, parenthesised."""
    return st.recursive(
        atoms(columns, bounds),
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(
                lambda t: f"({t[0]}) {t[1]} ({t[2]})"),
            inner.map(lambda c: f"NOT ({c})")),
        max_leaves=leaves)

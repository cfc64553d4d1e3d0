"""Generated ``where:`` (and ``having:``) conditions in the documented language
(docs/guide/select.md): comparisons of a column with a constant (either side of the operator),
``BETWEEN``, ``IN (...)``, ``IS NULL`` / ``IS NOT NULL``, combined with ``AND``, ``OR`` and
``NOT``; over columns of any type given their constants (:func:`conditions_over`), or over int
and double columns with constants on and next to their boundary values (:func:`conditions`)."""

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
def atoms(draw: st.DrawFn, constants: Mapping[str, st.SearchStrategy[str]]) -> str:
    """One test of a column of ``constants`` (column -> the SQL text of its constants)."""
    column = draw(st.sampled_from(sorted(constants)))
    constant = constants[column]
    form = draw(st.sampled_from(["compare", "between", "in", "null"]))
    if form == "compare":
        operator = draw(st.sampled_from(COMPARISONS))
        if draw(st.booleans()):  # (the constant on the left)
            return f"{draw(constant)} {MIRRORED[operator]} {column}"
        return f"{column} {operator} {draw(constant)}"
    if form == "between":
        return f"{column} BETWEEN {draw(constant)} AND {draw(constant)}"
    if form == "in":
        return f"{column} IN ({', '.join(draw(st.lists(constant, min_size=1, max_size=3)))})"
    return f"{column} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"


def conditions_over(constants: Mapping[str, st.SearchStrategy[str]],
                    leaves: int = 4) -> st.SearchStrategy[str]:
    """Conditions of at most ``leaves`` tests (:func:`atoms`) of the columns of ``constants``
    joined by ``AND``, ``OR`` and ``NOT``, parenthesised."""
    return st.recursive(
        atoms(constants),
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(
                lambda t: f"({t[0]}) {t[1]} ({t[2]})"),
            inner.map(lambda c: f"NOT ({c})")),
        max_leaves=leaves)


def conditions(columns: Mapping[str, str], bounds: Mapping[str, Sequence[float]],
               leaves: int = 4) -> st.SearchStrategy[str]:
    """:func:`conditions_over` the columns of ``columns`` (name -> ``int`` or ``double``) with
    constants near their ``bounds``."""
    return conditions_over({column: constants(kind, bounds[column])
                            for column, kind in columns.items()}, leaves)

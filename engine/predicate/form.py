"""The canonical predicate form: a NOT-free tree of AND/OR over single-column atoms.

Atoms are :class:`InSet` (the column is not null and its value lies in a canonical value set:
comparisons, ``BETWEEN``, ``IN``, ``IS NOT NULL``) and :class:`IsNull`; :data:`TRUE` and
:data:`FALSE` are constants. :func:`conjoin` and :func:`disjoin` build :class:`And` / :class:`Or`
nodes and simplify them: flattening, TRUE/FALSE, duplicates, one atom per column in a
conjunction (value sets intersected) and in a disjunction (value sets united), absorption
through :func:`~engine.predicate.logic.implies`, and merging of conjunctions that differ in one
column. Operands are sorted by their SQL text, so equal predicates have equal forms.

A row *passes* a predicate when it is TRUE. Because the form holds no NOT, a conjunction passes
when all its operands pass and a disjunction when one does; negations are pushed onto atoms when
parsing, with SQL's three-valued rules (see ``parse.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from .cells import comparable, in_set_mask, nulls, row_value
from .render import render_atom
from .values import ValueSet, contains, normalise

#: A frame's column as compared by atoms: (values, where NULL), from (column name, type).
Columns = Callable[[str, str], tuple[np.ndarray, np.ndarray]]


class Pred:
    """A node of the canonical form (frozen, hashable, comparable by value)."""

    @cached_property
    def sql(self) -> str:
        return self._sql()

    def to_sql(self) -> str:
        """Canonical SQL text; parsing it back gives an equal form."""
        return self.sql

    def _sql(self) -> str:
        raise NotImplementedError

    @property
    def columns(self) -> frozenset[str]:
        """The columns the predicate reads."""
        raise NotImplementedError

    def evaluate(self, frame: pd.DataFrame) -> np.ndarray:
        """Vectorised: the numpy bool mask of the rows of ``frame`` that pass (a timestamp
        column may hold datetimes of any unit or time zone, naive meaning UTC, or integer
        microseconds)."""
        cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

        def column(name: str, ctype: str) -> tuple[np.ndarray, np.ndarray]:
            if name not in cache:
                series = frame[name]
                null = nulls(series)
                cache[name] = (comparable(series, ctype, null), null)
            return cache[name]

        return self._mask(column, len(frame))

    def evaluate_row(self, row: dict[str, Any]) -> bool | None:
        """Row at a time, three-valued (Kleene): True, False or None (UNKNOWN); only True
        passes. A value-set atom on NULL is UNKNOWN, ``IS NULL`` is never UNKNOWN."""
        raise NotImplementedError

    def _mask(self, column: Columns, size: int) -> np.ndarray:
        """The rows that pass, over ``size`` rows whose columns ``column`` gives."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.sql


@dataclass(frozen=True, eq=True)
class Const(Pred):
    value: bool

    def _sql(self) -> str:
        return "TRUE" if self.value else "FALSE"

    @property
    def columns(self) -> frozenset[str]:
        return frozenset()

    def evaluate_row(self, row: dict[str, Any]) -> bool | None:
        return self.value

    def _mask(self, column: Columns, size: int) -> np.ndarray:
        return np.full(size, self.value, dtype=bool)


TRUE = Const(True)
FALSE = Const(False)


@dataclass(frozen=True, eq=True)
class InSet(Pred):
    """``column`` is not null and its value lies in ``values`` (a canonical value set)."""

    column: str
    ctype: str
    values: ValueSet

    def _sql(self) -> str:
        return render_atom(self.column, self.ctype, self.values)

    @property
    def columns(self) -> frozenset[str]:
        return frozenset((self.column,))

    def evaluate_row(self, row: dict[str, Any]) -> bool | None:
        value = row_value(row[self.column], self.ctype)
        return None if value is None else contains(self.values, value)

    def _mask(self, column: Columns, size: int) -> np.ndarray:
        return in_set_mask(*column(self.column, self.ctype), self.values)


@dataclass(frozen=True, eq=True)
class IsNull(Pred):
    column: str
    ctype: str

    def _sql(self) -> str:
        return render_atom(self.column, self.ctype, None)

    @property
    def columns(self) -> frozenset[str]:
        return frozenset((self.column,))

    def evaluate_row(self, row: dict[str, Any]) -> bool | None:
        return row_value(row[self.column], self.ctype) is None

    def _mask(self, column: Columns, size: int) -> np.ndarray:
        return column(self.column, self.ctype)[1].copy()


@dataclass(frozen=True, eq=True)
class Junction(Pred):
    """An :class:`And` or :class:`Or` node over its (sorted) operands."""

    operands: tuple[Pred, ...]

    @cached_property
    def columns(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset().union(*(o.columns for o in self.operands))

    def evaluate_row(self, row: dict[str, Any]) -> bool | None:
        results = [o.evaluate_row(row) for o in self.operands]
        decisive = isinstance(self, Or)  # True decides an OR, False decides an AND
        if decisive in results:
            return decisive
        return None if None in results else not decisive

    def _mask(self, column: Columns, size: int) -> np.ndarray:
        if not self.operands:  # (an empty AND is TRUE, an empty OR FALSE)
            return np.full(size, isinstance(self, And), dtype=bool)
        reduce = np.logical_and if isinstance(self, And) else np.logical_or
        return reduce.reduce([o._mask(column, size) for o in self.operands])


@dataclass(frozen=True, eq=True)
class And(Junction):
    def _sql(self) -> str:
        return " AND ".join(f"({o.sql})" if isinstance(o, Or) else o.sql for o in self.operands)


@dataclass(frozen=True, eq=True)
class Or(Junction):
    def _sql(self) -> str:
        return " OR ".join(f"({o.sql})" if isinstance(o, And) else o.sql for o in self.operands)


def in_set(column: str, ctype: str, values: ValueSet) -> Pred:
    """The atom ``column ∈ values`` (FALSE for the empty set)."""
    values = normalise(ctype, values)
    return InSet(column, ctype, values) if values else FALSE


def is_null(column: str, ctype: str) -> Pred:
    return IsNull(column, ctype)


def sort_key(p: Pred) -> str:
    return p.sql

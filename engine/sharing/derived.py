"""Derived columns in the shared scan: a query's ``derive:`` columns as columns of its cluster's
stream, one per definition.

A derived column's **definition** is its expression, parsed with sqlglot, with the derived
columns it reads replaced by their own definitions (cast to their declared type), and its
declared type; two queries' columns are the same column when their definitions are equal, as
parsed trees (so spacing, keyword case and the names of intermediate columns do not matter).
The planner sees a query's derived column under a **stream name**, ``<name>@<digest>`` (the
digest of the definition): two queries with different definitions of one name read different
columns, and the same definition under the same name is one column. The constant key of
``key: none`` keeps its reserved name (its definition is fixed).

Pure Python (sqlglot): what the runner computes, and how, is in ``jobs/shared/shared_derive.py``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace

import sqlglot
from sqlglot import exp

from ..derive import constant_value
from ..predicate import Pred, conjoin, disjoin
from ..predicate.form import And, InSet, IsNull, Or
from ..specs import GLOBAL_KEY
from .view import AggregateView, DerivedColumn, SharingView

#: Declared type -> the cast that keeps a referenced derived column's type when it is inlined.
_CASTS = {"double": "DOUBLE", "int": "BIGINT"}


def definitions(derived: Mapping[str, tuple[str, str]]) -> dict[str, DerivedColumn]:
    """Each derived column (name -> (Spark SQL, catalog type), in declaration order, as the
    catalog keeps them) as its stream column."""
    trees: dict[str, exp.Expression] = {}
    out = {}
    for name, (sql, declared) in derived.items():
        tree = sqlglot.parse_one(sql, read="spark").transform(
            lambda node: _inlined(node, trees, derived))
        trees[name] = tree
        canonical = tree.sql(dialect="spark")
        digest = hashlib.sha256(f"{declared}\0{canonical}".encode()).hexdigest()[:8]
        partitions = sorted({p.sql(dialect="spark") for w in tree.find_all(exp.Window)
                             for p in w.args.get("partition_by") or []})
        out[name] = DerivedColumn(name if name == GLOBAL_KEY else f"{name}@{digest}", name,
                                  canonical, declared, partitions[0] if partitions else None,
                                  digest)
    return out


def _inlined(node: exp.Expression, trees: Mapping[str, exp.Expression],
             derived: Mapping[str, tuple[str, str]]) -> exp.Expression:
    """``node``, or the definition of the earlier derived column it names (in its type)."""
    if not isinstance(node, exp.Column) or node.table or node.name not in trees:
        return node
    inner = exp.Paren(this=trees[node.name].copy())
    cast = _CASTS.get(derived[node.name][1])
    return exp.Cast(this=inner, to=exp.DataType.build(cast)) if cast else inner


def renamed(pred: Pred, names: Mapping[str, str]) -> Pred:
    """``pred`` over the columns renamed by ``names`` (the others as they are)."""
    if isinstance(pred, InSet | IsNull):
        return replace(pred, column=names.get(pred.column, pred.column))
    if isinstance(pred, And):
        return conjoin(*(renamed(o, names) for o in pred.operands))
    if isinstance(pred, Or):
        return disjoin(*(renamed(o, names) for o in pred.operands))
    return pred


def with_derived(view: SharingView, derived: Mapping[str, tuple[str, str]]) -> SharingView:
    """``view`` of a query with derived columns, over their stream names: its predicate,
    columns, key and aggregated columns; ``view.derived`` lists them all (the stream carries
    every one, as the query's late and quarantine events do)."""
    if not derived:
        return view
    columns = definitions(derived)
    names = {n: c.stream for n, c in columns.items()}
    return replace(
        view, where=renamed(view.where, names),
        columns=frozenset(names.get(c, c) for c in view.columns) | set(names.values()),
        key=None if view.key is None else names.get(view.key, view.key),
        aggregates=tuple(AggregateView(a.name, a.fn, None if a.column is None else
                                       names.get(a.column, a.column)) for a in view.aggregates),
        derived=tuple(sorted(columns.values())))


@dataclass(frozen=True)
class SharedColumn:
    """A definition computed once for a cluster: its stream names (one per name the members
    give it) and the members that read it."""

    sql: str
    type: str
    partition: str | None
    digest: str
    streams: tuple[str, ...]
    queries: tuple[str, ...]

    @property
    def constant(self) -> bool:
        """Whether the column is a literal (added to the events as they are read, such as the
        key of ``key: none``), not computed."""
        return constant_value(self.sql, self.type) is not None

    def to_json(self) -> dict:
        return {"sql": self.sql, "type": self.type, "columns": list(self.streams),
                "queries": list(self.queries), "constant": self.constant}


def shared_columns(members: tuple[SharingView, ...] | list[SharingView]
                   ) -> tuple[SharedColumn, ...]:
    """The derived columns a cluster of ``members`` computes, once each: by definition, in the
    order of their SQL."""
    found: dict[str, list[tuple[DerivedColumn, str]]] = {}
    for m in members:
        for d in m.derived:
            found.setdefault(d.digest, []).append((d, m.name))
    out = []
    for uses in found.values():
        first = uses[0][0]
        out.append(SharedColumn(first.sql, first.type, first.partition, first.digest,
                                tuple(sorted({d.stream for d, _ in uses})),
                                tuple(sorted({q for _, q in uses}))))
    return tuple(sorted(out, key=lambda c: (c.sql, c.type)))

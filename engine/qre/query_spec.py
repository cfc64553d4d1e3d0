"""``kind: qre`` queries of the catalog: the query text, its output mode and the recording's
columns it reads. The predicates are type-checked against the recording's column types before
anything runs (a number used as a predicate is an error naming the query)."""

from __future__ import annotations

from dataclasses import dataclass

from ..specs import CatalogError, QuerySpec, RecordingSpec
from .errors import QREError
from .item_checks import COLUMN_VALUE_TYPES, atoms_of
from .terms import Term
from .text import parse
from .types import BOOL, join, show

OUTPUT_MODES = ("every", "changes", "final")


@dataclass(frozen=True)
class QreSpec:
    """A per-key QRE query of the catalog."""

    key: str
    key_type: str
    lateness_us: int
    text: str
    output: str
    timestamp_columns: tuple[str, ...]
    fields: tuple[str, ...]  # the recording columns the query reads (items carry only these)
    int_columns: tuple[str, ...] = ()  # the recording's int columns (read as ints, even when
    # nulls in a batch made pandas hold them as floats)
    field_types: tuple[str, ...] = ()  # the catalog type of each of ``fields`` (empty: unknown)

    def column_types(self) -> dict[str, str]:
        """The catalog type of each field the query reads (empty when not known)."""
        return dict(zip(self.fields, self.field_types, strict=True)) if self.field_types else {}


def parse_qre_query(query: QuerySpec, recording: RecordingSpec) -> QreSpec:
    """Check the ``query`` text and ``output`` mode of a ``kind: qre`` query."""
    if not isinstance(query.query, str):
        raise CatalogError(query.source, "query", "expected the QRE text (see engine/qre/README)")
    try:
        term = parse(query.query)
    except QREError as exc:
        raise CatalogError(query.source, "query", str(exc)) from exc
    unknown = sorted(term.fields - set(recording.columns))
    if unknown:
        raise CatalogError(query.source, "query", f"reads {', '.join(map(repr, unknown))}, not "
                           f"a column of recording {recording.name!r}")
    _check_predicates(term, recording, query)
    output = query.output or "every"
    if output not in OUTPUT_MODES:
        raise CatalogError(query.source, "output",
                           f"expected one of {', '.join(OUTPUT_MODES)}, got {output!r}")
    key = query.key or recording.key
    return QreSpec(key=key, key_type=recording.columns[key], lateness_us=query.lateness_us,
                   text=query.query, output=output,
                   timestamp_columns=tuple(c for c, t in recording.columns.items()
                                           if t == "timestamp"),
                   fields=tuple(c for c in recording.columns if c in term.fields),
                   int_columns=tuple(c for c, t in recording.columns.items() if t == "int"),
                   field_types=tuple(t for c, t in recording.columns.items()
                                     if c in term.fields))


def _check_predicates(term: Term, recording: RecordingSpec, query: QuerySpec) -> None:
    """Every predicate of ``term`` is a bool over the recording's column types."""
    types = {c: COLUMN_VALUE_TYPES.get(t, "any") for c, t in recording.columns.items()}
    for atom in atoms_of(term):
        expr = atom.pred.expr
        if expr is None:
            continue
        columns = ", ".join(f"{f!r} is {recording.columns[f]}" for f in sorted(expr.fields))
        where = f"in the predicate {atom.pred.key!r} of {atom}" + (
            f" (column {columns})" if columns else "")
        try:
            kind = expr.result_type((), types)
        except QREError as exc:
            raise CatalogError(query.source, "query", f"{exc}, {where}") from exc
        if join(kind, BOOL) is None:
            raise CatalogError(query.source, "query",
                               f"a predicate must be a bool, but it has type {show(kind)} "
                               f"{where}")


"""``input: {query: NAME}``: a query reading another query's output (a pipeline stage), checked
when the catalog loads.

The upstream's output rows are the stage's events: their columns (those of a catalog type) are
the stage's input columns (but ``arrival_seq``: the stage numbers its events anew), its family
says the default key and event-time columns and the emission order
(:meth:`engine.family.QueryFamily.output_stream`). Only final rows flow: an
upstream whose rows can be superseded is refused. A stage over a stateful upstream (a window, a
QRE) keeps the upstream's key: the rows of one key come in an order no batch plan changes, while
the interleaving of keys depends on where batches are cut.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from .registry import family_of
from .specs import COLUMN_TYPES, CatalogError, QuerySpec, RecordingSpec, Upstream, check_fields

#: Output columns a stage does not read: it numbers its events anew (its own ``arrival_seq``,
#: the column of its late and quarantine tables, with their ``reason``).
RENUMBERED = ("arrival_seq", "reason", "batch")


class UpstreamCycle(Exception):
    """Loading a query needs the query itself: ``chain`` is the names from it back to it."""

    def __init__(self, chain: list[str]):
        self.chain = chain
        super().__init__(" -> ".join(chain))


def catalog_type(type_: pa.DataType) -> str | None:
    """The catalog type of an Arrow column type (None: no catalog type reads it)."""
    for name, known in COLUMN_TYPES.items():
        if type_.equals(known) or (pa.types.is_timestamp(type_) and name == "timestamp"):
            return name
    return None


def upstream_of(value: dict, recordings: dict[str, RecordingSpec], source: str,
                queries: Callable[[str], QuerySpec | None] | None, name: str) -> Upstream:
    """The upstream ``input: {query: NAME}`` names, and its output as the stream the query
    ``name`` reads; any problem is a CatalogError of ``source``'s field ``input``."""
    check_fields(value, ("query",), source, "input")
    wanted = value.get("query")
    if not isinstance(wanted, str) or not wanted:
        raise CatalogError(source, "input", "expected {query: NAME} naming a query of the "
                           f"catalog, got {value!r}")
    if wanted == name:
        raise CatalogError(source, "input", f"query {name!r} cannot read its own output")
    try:
        found = queries(wanted) if queries is not None else None
    except UpstreamCycle as cycle:
        raise CatalogError(source, "input", "a cycle of queries, each reading the next one's "
                           f"output: {cycle}") from None
    except CatalogError as exc:
        if exc.problem.startswith("a cycle of queries"):
            raise CatalogError(source, "input", exc.problem) from None
        raise CatalogError(source, "input", f"query {wanted!r} failed to load: {exc}") from None
    if found is None:
        raise CatalogError(source, "input", f"unknown query {wanted!r}: no query of that name "
                           "in the catalog")
    family = family_of(found.kind, found.source)
    try:
        stream = family.output_stream(found, recordings)
        schema = family.output_schema(found, recordings)
    except CatalogError as exc:  # (the upstream's query block)
        raise CatalogError(source, "input", f"query {wanted!r} failed to load: {exc}") from None
    if isinstance(stream, str):
        raise CatalogError(source, "input", f"query {wanted!r} cannot be read: {stream}")
    columns = {f.name: t for f in schema
               if (t := catalog_type(f.type)) is not None and f.name not in RENUMBERED}
    spec = RecordingSpec(name=wanted, columns=columns, key=stream.key or "",
                         time=stream.time or "", source=found.source)
    return Upstream(query=found, stream=spec, order=stream.order,
                    keyed=stream.keyed)


def check_upstream_fields(upstream: Upstream, doc: dict, source: str) -> None:
    """The ``key:`` and ``time:`` of a stage reading ``upstream``: required where the upstream
    has no default, and the upstream's own key over a stateful upstream."""
    stream = upstream.stream
    for fieldname, default in (("key", stream.key), ("time", stream.time)):
        if fieldname not in doc and not default:
            raise CatalogError(source, fieldname, f"is required: the output of query "
                               f"{stream.name!r} has no default {fieldname} column (columns: "
                               f"{', '.join(stream.columns)})")
    if "batch" in doc:
        raise CatalogError(source, "batch", "a pipeline stage is cut where its upstream's "
                           "batches end: set batch: on the first query of the chain")
    key = doc.get("key", stream.key)
    if upstream.keyed and key != stream.key:
        raise CatalogError(source, "key", f"must be {stream.key!r}, the key of query "
                           f"{stream.name!r}: a {upstream.query.kind} query's rows of different "
                           "keys interleave by where its batches are cut, so another key would "
                           "make this query's output depend on the batch plan")

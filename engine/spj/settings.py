"""An ``spj`` query of the catalog: its SQL, application-time columns and stream schemas."""

from __future__ import annotations

from ..specs import CatalogError, QuerySpec, RecordingSpec


def spj_settings(query: QuerySpec) -> tuple[str, dict[str, str] | None, bool]:
    """(SQL text, application-time columns per stream, allow_unbounded) of an ``spj`` query."""
    body = query.query
    if isinstance(body, str):
        body = {"sql": body}
    if not isinstance(body, dict) or not isinstance(body.get("sql"), str):
        raise CatalogError(query.source, "query", "expected the SQL text, or {sql: ..., "
                           "timestamps: {stream: column}}")
    unknown = set(body) - {"sql", "timestamps"}
    if unknown:
        raise CatalogError(query.source, f"query.{sorted(unknown)[0]}", "unknown field")
    allow = query.raw.get("allow_unbounded", False)
    if not isinstance(allow, bool):
        raise CatalogError(query.source, "allow_unbounded",
                           f"expected true or false, got {allow!r}")
    return body["sql"], body.get("timestamps"), allow


def spj_schemas(query: QuerySpec, recordings: dict[str, RecordingSpec]
                ) -> dict[str, dict[str, str]]:
    """Stream schemas for the analyser: int and timestamp columns (microseconds) are integers."""
    return {s: {c: "int" if t in ("int", "timestamp") else t
                for c, t in recordings[r].columns.items()} for s, r in query.inputs.items()}

"""``reprise analyze``: the bounded-memory verdict of an SPJ query."""

from __future__ import annotations

import re
from typing import Annotated

import typer
from typer._click.exceptions import UsageError  # (typer's own click)

from jobs.cli.command_context import catalog_of
from jobs.cli.options import Catalog_
from jobs.cli.output import console, fail
from jobs.settings import load_settings


def analyze(
    ctx: typer.Context,
    sql: Annotated[str | None, typer.Argument(help="SELECT ... FROM ... WHERE ... query")] = None,
    schema: Annotated[list[str] | None, typer.Option(
        "--schema", help='A stream and its integer attributes, e.g. "S(A,B,C)"; repeat')] = None,
    timestamp: Annotated[list[str] | None, typer.Option(
        "--timestamp", help='Application-time attribute of a stream, e.g. "S.ts"; repeat')]
        = None,
    query: Annotated[str | None, typer.Option(
        "--query", help="Analyse this spj query of the catalog (instead of SQL and --schema)")]
        = None,
    catalog: Catalog_ = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON")] = False,
) -> None:
    """Decide whether an SPJ query runs in bounded memory, and explain the verdict."""
    import json

    from engine.spj import analyze as analyze_query

    if query is not None and (sql is not None or schema):
        raise UsageError("give either a SQL query with --schema or --query NAME, not both", ctx)
    if query is not None:
        from engine.specs import CatalogError
        from engine.spj import SpjError
        from engine.spj.family import analysis_inputs

        cat = catalog_of(load_settings(), catalog)
        spec = cat.query(query)
        sql, schemas, stamps = analysis_inputs(spec, cat.recordings)
        try:
            result = analyze_query(sql, schemas, stamps or None)
        except SpjError as exc:  # named as a replay of the query names it
            raise CatalogError(spec.source, "query", str(exc)) from exc
    elif sql is None or not schema:
        raise UsageError("give a SQL query with --schema for each stream, or --query NAME of "
                         "the catalog", ctx)
    else:
        schemas, stamps = _cli_schemas(schema, timestamp or [])
        result = analyze_query(sql, schemas, stamps or None)
    if as_json:
        print(json.dumps(result.to_json(), indent=1, default=str))
        return
    verdict = "[green]bounded[/]" if result.bounded else "[red]unbounded[/]"
    console.print(f"{verdict} ({result.semantics} semantics, proof: {result.proof})")
    for v in result.violations:
        console.print(f"  {v.condition}: {v.explanation}", highlight=False)
    payload = result.to_json()
    for label in ("synopsis", "witness"):
        if label in payload:
            console.print(f"  {label}: {json.dumps(payload[label], default=str)}",
                          highlight=False)


def _cli_schemas(schema: list[str], timestamp: list[str]
                 ) -> tuple[dict[str, list[str]], dict[str, str]]:
    """``--schema S(A,B)`` and ``--timestamp S.ts`` options as analyser arguments."""
    schemas: dict[str, list[str]] = {}
    for text in schema:
        m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*\(\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)"
                         r"\s*\)\s*", text)
        if not m:
            fail(f"--schema {text!r}: expected NAME(ATTR, ...), e.g. \"S(A,B,C)\"")
        attributes = [a.strip() for a in m.group(2).split(",")]
        if m.group(1) in schemas or len(set(attributes)) < len(attributes):
            fail(f"--schema {text!r}: stream {m.group(1)} or one of its attributes is given "
                  "twice")
        schemas[m.group(1)] = attributes
    stamps = {}
    for text in timestamp:
        stream, dot, attr = text.partition(".")
        if not dot or not attr:
            fail(f"--timestamp {text!r}: expected STREAM.ATTRIBUTE, e.g. \"S.ts\"")
        stamps[stream] = attr
    return schemas, stamps

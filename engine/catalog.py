"""The catalog loader: recording and query files under ``schemas/``, parsed and checked into the
specs of :mod:`engine.specs` (each query by its family, from :mod:`engine.registry`).

Every problem is reported as a :class:`CatalogError` naming the file, the field and what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import sqlglot
import yaml

from .batch_plans import parse_batch
from .derive_sql import expression_problem
from .names import name_problem
from .pipeline_catalog import UpstreamCycle, check_upstream_fields, upstream_of
from .predicate import Pred, PredicateError, parse_predicate
from .registry import family_of
from .specs import (
    COLUMN_TYPES,
    GLOBAL_KEY,
    GLOBAL_VALUE,
    CatalogError,
    QuerySpec,
    RecordingSpec,
    UnknownName,
    Upstream,
    check_fields,
    parse_duration_us,
)

_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"


def _require(doc: dict, key: str, source: str, kind: type | tuple[type, ...] = str) -> Any:
    if key not in doc or doc[key] is None:
        raise CatalogError(source, key, "is required")
    value = doc[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise CatalogError(source, key, f"expected {names}, got {type(value).__name__} {value!r}")
    return value


def _unknown_field(doc: dict, known: set[str] | frozenset[str], source: str) -> None:
    unknown = sorted(map(str, set(doc) - known))
    if unknown:
        raise CatalogError(source, unknown[0], "unknown field")


def _load_yaml(path: Path) -> dict:
    """The top-level mapping of a YAML file; any problem is a CatalogError naming the file."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogError(str(path), "<document>", f"cannot be read: {exc.strerror}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise CatalogError(str(path), "<document>", f"not UTF-8 text: byte "
                           f"0x{data[exc.start]:02x} on line {line}") from exc
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        problem = " ".join(str(exc).split())
        raise CatalogError(str(path), "<document>", f"not valid YAML ({where}): {problem}"
                           ) from exc
    except (ValueError, RecursionError) as exc:  # e.g. a date such as 2026-02-30
        raise CatalogError(str(path), "<document>", f"not valid YAML: {exc}") from exc
    if not isinstance(doc, dict):
        raise CatalogError(str(path), "<document>", "expected a mapping at the top level")
    return doc


def parse_recording(doc: dict, source: str = "<inline>") -> RecordingSpec:
    """Check a recording document and build its spec."""
    name = _require(doc, "name", source)
    columns = _require(doc, "columns", source, dict)
    for col, typ in columns.items():
        if not isinstance(col, str) or not col:
            raise CatalogError(source, f"columns.{col}", "a column name must be a non-empty "
                               "string")
        if not isinstance(typ, str) or typ not in COLUMN_TYPES:
            raise CatalogError(source, f"columns.{col}",
                               f"unknown type {typ!r}; expected one of {', '.join(COLUMN_TYPES)}")
    key = _require(doc, "key", source)
    time = _require(doc, "time", source)
    if key not in columns:
        raise CatalogError(source, "key", f"column {key!r} is not among the columns")
    if time not in columns:
        raise CatalogError(source, "time", f"column {time!r} is not among the columns")
    if columns[time] != "timestamp":
        raise CatalogError(source, "time", f"column {time!r} must have type timestamp")
    _unknown_field(doc, {"name", "columns", "key", "time", "description"}, source)
    return RecordingSpec(name=name, columns=dict(columns), key=key, time=time,
                         description=str(doc.get("description", "")), source=source)


_QUERY_FIELDS = {"name", "kind", "input", "inputs", "key", "time", "lateness", "batch", "query",
                 "output", "expectations", "description", "allow_unbounded", "derive", "where"}
#: Fields of the queries of one recording only, and of several recordings only.
_SINGLE_INPUT_ONLY = ("input", "key", "time", "lateness")
_MULTI_INPUT_ONLY = ("inputs", "allow_unbounded")


def parse_query(doc: dict, recordings: dict[str, RecordingSpec],
                source: str = "<inline>",
                queries: Callable[[str], QuerySpec | None] | None = None) -> QuerySpec:
    """Check a query document against the known recordings and build its spec; ``queries``
    finds the query an ``input: {query: NAME}`` reads (None for an unknown name; it raises a
    CatalogError of that query's file when the query failed to load)."""
    _unknown_field(doc, _QUERY_FIELDS, source)
    name = _require(doc, "name", source)
    if not re.fullmatch(_IDENTIFIER, name):
        raise CatalogError(source, "name", f"{name!r} must be an identifier (letters, digits, _)")
    kind = _require(doc, "kind", source)
    single = family_of(kind, source).single_input
    foreign = [f for f in (_MULTI_INPUT_ONLY if single else _SINGLE_INPUT_ONLY) if f in doc]
    if foreign:  # (it would be ignored)
        reads = "one recording" if single else "several recordings"
        raise CatalogError(source, foreign[0], f"not a field of a {kind} query (it reads {reads})")
    upstream: Upstream | None = None
    if single and isinstance(doc.get("input"), dict):
        upstream = upstream_of(doc["input"], recordings, source, queries, name)
        inputs = {"input": upstream.query.name}
    elif single:
        inputs = {"input": _require(doc, "input", source)}
    else:
        inputs = _require(doc, "inputs", source, dict)
        if not inputs:
            raise CatalogError(source, "inputs", "expected at least one stream: recording")
    for alias, rec in inputs.items():
        fieldname = "input" if single else f"inputs.{alias}"
        if not isinstance(alias, str) or not re.fullmatch(_IDENTIFIER, alias):
            raise CatalogError(source, fieldname, "a stream name must be an identifier "
                               "(letters, digits, _)")
        if isinstance(rec, dict) and "query" in rec and not single:
            raise CatalogError(source, fieldname, f"a {kind} query reads recordings only: its "
                               "streams are merged by event time, not by a query's emission "
                               "batches; read the query's input recording instead")
        if not isinstance(rec, str):
            raise CatalogError(source, fieldname,
                               f"expected a recording name, got {type(rec).__name__} {rec!r}")
        if upstream is None and rec not in recordings:
            known = ", ".join(sorted(recordings)) or "none"
            raise CatalogError(source, fieldname, f"unknown recording {rec!r} (known: {known})")
    key = time = where = None
    first = upstream.stream if upstream else recordings[next(iter(inputs.values()))]
    derived = _derived(doc.get("derive"), source, single, first)
    if single:
        rec = first
        if upstream is not None:
            check_upstream_fields(upstream, doc, source)
        key = doc.get("key", rec.key)
        if key == "none":  # one group: a constant key column
            if GLOBAL_KEY in derived:
                raise CatalogError(source, f"derive.{GLOBAL_KEY}", "is reserved for key: none")
            key, derived = GLOBAL_KEY, {**derived, GLOBAL_KEY: (f"'{GLOBAL_VALUE}'", "string")}
        time = doc.get("time", rec.time)
        for fieldname, value in (("key", key), ("time", time)):
            if not isinstance(value, str):
                raise CatalogError(source, fieldname, f"expected a column name, got "
                                   f"{type(value).__name__} {value!r}")
        if key not in rec.columns and key not in derived:
            raise CatalogError(source, "key", f"column {key!r} is not in {_what(rec, upstream)}")
        if time not in rec.columns or rec.columns[time] != "timestamp":
            raise CatalogError(source, "time", f"column {time!r} is not a timestamp column of "
                               f"{_what(rec, upstream)}")
        where = _where(doc.get("where"), source,
                       {**rec.columns, **{n: t for n, (_, t) in derived.items()}})
    elif "where" in doc:
        raise CatalogError(source, "where", f"a {kind} query has its own SQL: put the row "
                           "condition in its WHERE")
    lateness = parse_duration_us(doc.get("lateness", 0), source=source, fieldname="lateness")
    if "query" not in doc:
        raise CatalogError(source, "query", "is required")
    expectations = doc.get("expectations") or []
    if not isinstance(expectations, list):
        raise CatalogError(source, "expectations", "expected a list")
    spec = QuerySpec(name=name, kind=kind, inputs=dict(inputs), key=key, time=time,
                     lateness_us=lateness, batch=parse_batch(doc.get("batch"), source),
                     query=doc["query"], output=doc.get("output"), expectations=expectations,
                     derived=derived, where=where, source=source, raw=doc, upstream=upstream)
    if upstream is not None:  # its query block against the upstream's output, before any run
        family = family_of(kind, source)
        family.parse(spec, family.input_recording(spec, recordings))
    return spec


def _what(rec: RecordingSpec, upstream: Upstream | None) -> str:
    """What a query reads, for a message: the recording, or the upstream query's output."""
    if upstream is None:
        return f"recording {rec.name!r}"
    return f"the output of query {rec.name!r} (columns: {', '.join(rec.columns)})"


def _where(value: Any, source: str, columns: dict[str, str]) -> Pred | None:
    """``where:``: a SQL row predicate over ``columns`` (name -> catalog type), or None."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise CatalogError(source, "where", "expected a SQL condition such as 'spo2 < 90', got "
                           f"{value!r}")
    try:
        return parse_predicate(value, columns)
    except PredicateError as exc:
        raise CatalogError(source, "where", str(exc)) from exc


def _derived(value: Any, source: str, single_input: bool, rec: RecordingSpec
             ) -> dict[str, tuple[str, str]]:
    """``derive: {name: {sql: EXPR, type: T}}``: columns computed from the recording by Spark
    SQL expressions (over the whole pinned input, ``__seq`` being the arrival order)."""
    if value is None:
        return {}
    if not single_input or not isinstance(value, dict):
        raise CatalogError(source, "derive", "expected a mapping name: {sql: EXPR, type: T} "
                           "(queries of one input recording only)")
    out = {}
    for name, body in value.items():
        where = f"derive.{name}"
        if not re.fullmatch(_IDENTIFIER, str(name)) or name in rec.columns:
            raise CatalogError(source, where, f"{name!r} must be an identifier that is not a "
                               f"column of the input {rec.name!r}")
        if not isinstance(body, dict):
            raise CatalogError(source, where, "expected {sql: EXPR, type: T}")
        check_fields(body, ("sql", "type"), source, where)
        for part in ("sql", "type"):
            if part not in body:
                raise CatalogError(source, f"{where}.{part}", "is required")
        if not isinstance(body["type"], str) or body["type"] not in COLUMN_TYPES:
            raise CatalogError(source, f"{where}.type", f"expected one of "
                               f"{', '.join(COLUMN_TYPES)}, got {body['type']!r}")
        columns = {**rec.columns, "__seq": "int", **{n: t for n, (_, t) in out.items()}}
        if problem := expression_problem(str(body["sql"]), body["type"], columns):
            raise CatalogError(source, f"{where}.sql", problem)
        out[str(name)] = (str(body["sql"]), body["type"])
    return out


def reads_history(derived: dict[str, tuple[str, str]]) -> bool:
    """Whether a derived column may depend on other events (a window function, ``OVER``): the
    runner then computes the columns over the whole pinned input; row-local expressions (such
    as the constant key of ``key: none``) need only the events being read."""
    return any(sqlglot.parse_one(sql, read="spark").find(sqlglot.exp.Window) is not None
               for sql, _ in derived.values())


@dataclass(frozen=True)
class Catalog:
    """The recordings and queries of a catalog directory, and the files that failed to load.

    A file that fails does not hide the others: asking for its name (its file name without
    ``.yaml``, which its ``name:`` must be) raises its error.
    """

    recordings: dict[str, RecordingSpec]
    queries: dict[str, QuerySpec]
    root: Path = Path("schemas")
    #: Errors of the recording files that failed, by name.
    broken_recordings: dict[str, CatalogError] = field(default_factory=dict)
    #: Errors of the query files that failed, by name.
    broken_queries: dict[str, CatalogError] = field(default_factory=dict)

    def recording(self, name: str) -> RecordingSpec:
        """The recording ``name``; else its file's error, or an UnknownName listing the known."""
        return self._lookup("recording", "recordings", name, self.recordings,
                            self.broken_recordings)

    def query(self, name: str) -> QuerySpec:
        """The query ``name``; else its file's error, or an UnknownName listing the known."""
        return self._lookup("query", "queries", name, self.queries, self.broken_queries)

    @property
    def root_problem(self) -> str | None:
        """Why the catalog directory cannot be read (it does not exist, or is not a directory),
        or None."""
        if self.root.is_dir():
            return None
        return "is not a directory" if self.root.exists() else "does not exist"

    def check(self) -> None:
        """Raise the first error of a file that failed to load, if any."""
        for problem in [*self.broken_recordings.values(), *self.broken_queries.values()]:
            raise problem

    def _lookup(self, what: str, subdirectory: str, name: str, loaded: dict,
                broken: dict[str, CatalogError]) -> Any:
        if name in loaded:
            return loaded[name]
        if name in broken:
            raise broken[name]
        folder = self.root / subdirectory
        if self.root_problem is not None:
            raise UnknownName(f"unknown {what} {name!r}: the catalog directory {self.root} "
                              f"{self.root_problem}")
        if not loaded and not broken:
            raise UnknownName(f"unknown {what} {name!r}: the catalog directory {self.root} has "
                              f"no {what} files ({folder}/*.yaml)")
        known = ", ".join(sorted(loaded)) or "none"
        failed = f"; files that failed to load: {', '.join(sorted(broken))}" if broken else ""
        raise UnknownName(f"unknown {what} {name!r} in the catalog {self.root} "
                          f"(known: {known}{failed})")


_Spec = TypeVar("_Spec", RecordingSpec, QuerySpec)


def load_catalog(root: str | Path) -> Catalog:
    """Load ``root/recordings/*.yaml`` and ``root/queries/*.yaml``.

    Never raises for a file: a file that is not valid (or whose ``name:`` is not its file name
    without ``.yaml``) is kept as its CatalogError, raised when its file name is asked for.
    """
    root = Path(root).resolve()
    recordings: dict[str, RecordingSpec] = {}
    broken_recordings: dict[str, CatalogError] = {}
    for path in sorted((root / "recordings").glob("*.yaml")):
        try:
            recording = _named_after(path, parse_recording(_load_yaml(path), str(path)))
        except CatalogError as exc:
            broken_recordings[path.stem] = exc
        else:
            recordings[recording.name] = recording
    queries: dict[str, QuerySpec] = {}
    broken_queries: dict[str, CatalogError] = {}
    paths = {path.stem: path for path in sorted((root / "queries").glob("*.yaml"))}
    loading: list[str] = []

    def load(name: str) -> QuerySpec | None:
        """The query of file ``name`` (its upstreams first); None: no such file."""
        if name in queries or name in broken_queries or name not in paths:
            if name in broken_queries:
                raise broken_queries[name]
            return queries.get(name)
        if name in loading:
            raise UpstreamCycle([*loading[loading.index(name):], name])
        loading.append(name)
        path = paths[name]
        try:
            query = _named_after(path, parse_query(_load_yaml(path), recordings, str(path),
                                                   load))
        except CatalogError as exc:
            broken_queries[name] = _blame_input(exc, broken_recordings)
            raise broken_queries[name] from None
        finally:
            loading.pop()
        queries[name] = query
        return query

    for name in paths:
        with suppress(CatalogError):  # (kept in broken_queries)
            load(name)
    queries = {name: queries[name] for name in paths if name in queries}
    return Catalog(recordings, queries, root, broken_recordings, broken_queries)


def _named_after(path: Path, spec: _Spec) -> _Spec:
    """``spec``, if its name is its file's name (so a name is defined by one file, found by
    that name)."""
    if spec.name != path.stem:
        raise CatalogError(spec.source, "name", f"{spec.name!r} is not the file's name "
                           f"{path.stem!r}")
    problem = name_problem(spec.name)  # (it becomes a path in the warehouse and an asset key)
    if problem is not None:
        raise CatalogError(spec.source, "name", problem)
    return spec


def _blame_input(exc: CatalogError, broken_recordings: dict[str, CatalogError]) -> CatalogError:
    """``exc``, naming the recording file's own error when the query reads a recording whose
    file failed to load, else listing the recording files that failed (one may be meant)."""
    if not exc.field.startswith("input") or not broken_recordings:
        return exc
    for name, problem in broken_recordings.items():
        if exc.problem.startswith(f"unknown recording {name!r}"):
            return CatalogError(exc.source, exc.field,
                                f"recording {name!r} failed to load: {problem}")
    if exc.problem.startswith("unknown recording ") and exc.problem.endswith(")"):
        failed = ", ".join(sorted(broken_recordings))
        return CatalogError(exc.source, exc.field,
                            f"{exc.problem[:-1]}; files that failed to load: {failed})")
    return exc

"""The declarative catalog: recording and query files under ``schemas/``, parsed and checked.

Every problem is reported as a :class:`CatalogError` naming the file, the field and what is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import yaml

from .derive_sql import expression_problem

COLUMN_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int": pa.int64(),
    "double": pa.float64(),
    "bool": pa.bool_(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}

QUERY_KINDS = ("qre", "spj", "window")

_DURATION = re.compile(r"^\s*(\d+)\s*(us|ms|s|m|h|d)\s*$")
_UNIT_US = {"us": 1, "ms": 1_000, "s": 1_000_000, "m": 60_000_000, "h": 3_600_000_000,
            "d": 86_400_000_000}


class CatalogError(ValueError):
    """A catalog file is invalid; the message names the file, the field and the problem."""

    def __init__(self, source: str, fieldname: str, problem: str):
        self.source, self.field, self.problem = source, fieldname, problem
        super().__init__(f"{source}: field '{fieldname}': {problem}")


def parse_duration_us(text: str | int, *, source: str = "<input>",
                      fieldname: str = "duration") -> int:
    """Parse ``"90s"``, ``"1m"``, ``"500ms"``, ``"2h"``, ``"1d"`` (or an int of microseconds)."""
    if isinstance(text, bool):
        raise CatalogError(source, fieldname, f"expected a duration like '30s', got {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise CatalogError(source, fieldname, f"duration must not be negative, got {text}")
        return text
    m = _DURATION.match(str(text))
    if not m:
        raise CatalogError(
            source, fieldname,
            f"expected a duration like '30s', '1m', '500ms', '2h' or '1d', got {text!r}")
    return int(m.group(1)) * _UNIT_US[m.group(2)]


@dataclass(frozen=True)
class RecordingSpec:
    """A recorded event stream stored as a Delta table."""

    name: str
    columns: dict[str, str]
    key: str
    time: str
    description: str = ""
    source: str = "<inline>"

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c, COLUMN_TYPES[t]) for c, t in self.columns.items()])


@dataclass(frozen=True)
class BatchSpec:
    """The default batch plan of a query: by commit, every N rows, or every event-time interval."""

    by: str = "commit"  # commit | rows | time | cuts
    rows: int | None = None
    interval_us: int | None = None
    cuts: tuple[int, ...] = ()

    def describe(self) -> str:
        if self.by == "rows":
            return f"rows:{self.rows}"
        if self.by == "time":
            return f"time:{self.interval_us}us"
        if self.by == "cuts":
            return "cuts:" + ",".join(map(str, self.cuts))
        return "commit"


@dataclass(frozen=True)
class QuerySpec:
    """A continuous query over one (qre, window) or several (spj) recordings."""

    name: str
    kind: str
    inputs: dict[str, str]
    key: str | None
    time: str | None
    lateness_us: int
    batch: BatchSpec
    query: Any
    output: str | None = None
    expectations: list[Any] = field(default_factory=list)
    #: Derived input columns: name -> (Spark SQL expression, column type); see :func:`_derived`.
    derived: dict[str, tuple[str, str]] = field(default_factory=dict)
    source: str = "<inline>"
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def input(self) -> str:
        """The single input recording (qre and window queries)."""
        return next(iter(self.inputs.values()))


def _require(doc: dict, key: str, source: str, kind: type | tuple[type, ...] = str) -> Any:
    if key not in doc or doc[key] is None:
        raise CatalogError(source, key, "is required")
    value = doc[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise CatalogError(source, key, f"expected {names}, got {type(value).__name__} {value!r}")
    return value


def _load_yaml(path: Path) -> dict:
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        raise CatalogError(str(path), "<document>", f"not valid YAML ({where}): {exc}") from exc
    if not isinstance(doc, dict):
        raise CatalogError(str(path), "<document>", "expected a mapping at the top level")
    return doc


def parse_recording(doc: dict, source: str = "<inline>") -> RecordingSpec:
    """Check a recording document and build its spec."""
    name = _require(doc, "name", source)
    columns = _require(doc, "columns", source, dict)
    for col, typ in columns.items():
        if typ not in COLUMN_TYPES:
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
    unknown = set(doc) - {"name", "columns", "key", "time", "description"}
    if unknown:
        raise CatalogError(source, sorted(unknown)[0], "unknown field")
    return RecordingSpec(name=name, columns=dict(columns), key=key, time=time,
                         description=str(doc.get("description", "")), source=source)


def _parse_batch(value: Any, source: str) -> BatchSpec:
    if value is None:
        return BatchSpec()
    if not isinstance(value, dict) or "by" not in value:
        raise CatalogError(source, "batch", "expected a mapping such as {by: commit}, "
                           "{by: rows, rows: 1000} or {by: time, every: 1h}")
    by = value["by"]
    if by == "commit":
        return BatchSpec()
    if by == "rows":
        rows = value.get("rows")
        if not isinstance(rows, int) or isinstance(rows, bool) or rows <= 0:
            raise CatalogError(source, "batch.rows", f"expected a positive integer, got {rows!r}")
        return BatchSpec(by="rows", rows=rows)
    if by == "time":
        if not isinstance(value.get("every"), str):
            raise CatalogError(source, "batch.every", "expected a duration with a unit such as "
                               f"'10s' or '1h', got {value.get('every')!r}")
        every = parse_duration_us(value.get("every", ""), source=source, fieldname="batch.every")
        if every <= 0:
            raise CatalogError(source, "batch.every", "must be positive")
        return BatchSpec(by="time", interval_us=every)
    raise CatalogError(source, "batch.by", f"expected commit, rows or time, got {by!r}")


_QUERY_FIELDS = {"name", "kind", "input", "inputs", "key", "time", "lateness", "batch", "query",
                 "output", "expectations", "description", "allow_unbounded", "derive"}


def parse_query(doc: dict, recordings: dict[str, RecordingSpec],
                source: str = "<inline>") -> QuerySpec:
    """Check a query document against the known recordings and build its spec."""
    unknown = set(doc) - _QUERY_FIELDS
    if unknown:
        raise CatalogError(source, sorted(unknown)[0], "unknown field")
    name = _require(doc, "name", source)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise CatalogError(source, "name", f"{name!r} must be an identifier (letters, digits, _)")
    kind = _require(doc, "kind", source)
    if kind not in QUERY_KINDS:
        raise CatalogError(source, "kind",
                           f"expected one of {', '.join(QUERY_KINDS)}, got {kind!r}")
    if kind == "spj":
        inputs = _require(doc, "inputs", source, dict)
    else:
        inputs = {"input": _require(doc, "input", source)}
    for alias, rec in inputs.items():
        if rec not in recordings:
            fieldname = "input" if kind != "spj" else f"inputs.{alias}"
            known = ", ".join(sorted(recordings)) or "none"
            raise CatalogError(source, fieldname, f"unknown recording {rec!r} (known: {known})")
    key = time = None
    derived = _derived(doc.get("derive"), source, kind, recordings[next(iter(inputs.values()))])
    if kind != "spj":
        rec = recordings[inputs["input"]]
        key = doc.get("key", rec.key)
        time = doc.get("time", rec.time)
        if key not in rec.columns and key not in derived:
            raise CatalogError(source, "key", f"column {key!r} is not in recording {rec.name!r}")
        if time not in rec.columns or rec.columns[time] != "timestamp":
            raise CatalogError(source, "time",
                               f"column {time!r} is not a timestamp column of {rec.name!r}")
    lateness = parse_duration_us(doc.get("lateness", 0), source=source, fieldname="lateness")
    if "query" not in doc:
        raise CatalogError(source, "query", "is required")
    expectations = doc.get("expectations") or []
    if not isinstance(expectations, list):
        raise CatalogError(source, "expectations", "expected a list")
    return QuerySpec(name=name, kind=kind, inputs=dict(inputs), key=key, time=time,
                     lateness_us=lateness, batch=_parse_batch(doc.get("batch"), source),
                     query=doc["query"], output=doc.get("output"), expectations=expectations,
                     derived=derived, source=source, raw=doc)


def _derived(value: Any, source: str, kind: str, rec: RecordingSpec
             ) -> dict[str, tuple[str, str]]:
    """``derive: {name: {sql: EXPR, type: T}}``: columns computed from the recording by Spark
    SQL expressions (over the whole pinned input, ``__seq`` being the arrival order)."""
    if value is None:
        return {}
    if kind == "spj" or not isinstance(value, dict):
        raise CatalogError(source, "derive", "expected a mapping name: {sql: EXPR, type: T} "
                           "(window and qre queries only)")
    out = {}
    for name, body in value.items():
        where = f"derive.{name}"
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(name)) or name in rec.columns:
            raise CatalogError(source, where, f"{name!r} must be an identifier that is not a "
                               f"column of recording {rec.name!r}")
        if not isinstance(body, dict) or set(body) != {"sql", "type"}:
            raise CatalogError(source, where, "expected {sql: EXPR, type: T}")
        if body["type"] not in COLUMN_TYPES:
            raise CatalogError(source, f"{where}.type", f"expected one of "
                               f"{', '.join(COLUMN_TYPES)}, got {body['type']!r}")
        columns = {**rec.columns, "__seq": "int", **{n: t for n, (_, t) in out.items()}}
        if problem := expression_problem(str(body["sql"]), body["type"], columns):
            raise CatalogError(source, f"{where}.sql", problem)
        out[str(name)] = (str(body["sql"]), body["type"])
    return out


@dataclass(frozen=True)
class Catalog:
    """All recordings and queries of a ``schemas/`` directory."""

    recordings: dict[str, RecordingSpec]
    queries: dict[str, QuerySpec]

    def recording(self, name: str) -> RecordingSpec:
        if name not in self.recordings:
            known = ", ".join(sorted(self.recordings)) or "none"
            raise KeyError(f"unknown recording {name!r} (known: {known})")
        return self.recordings[name]

    def query(self, name: str) -> QuerySpec:
        if name not in self.queries:
            known = ", ".join(sorted(self.queries)) or "none"
            raise KeyError(f"unknown query {name!r} (known: {known})")
        return self.queries[name]


def load_catalog(root: str | Path) -> Catalog:
    """Load ``root/recordings/*.yaml`` and ``root/queries/*.yaml``; names must be unique."""
    root = Path(root)
    recordings: dict[str, RecordingSpec] = {}
    for path in sorted((root / "recordings").glob("*.yaml")):
        spec = parse_recording(_load_yaml(path), str(path))
        if spec.name in recordings:
            raise CatalogError(str(path), "name",
                               f"recording {spec.name!r} is also defined in "
                               f"{recordings[spec.name].source}")
        recordings[spec.name] = spec
    queries: dict[str, QuerySpec] = {}
    for path in sorted((root / "queries").glob("*.yaml")):
        spec = parse_query(_load_yaml(path), recordings, str(path))
        if spec.name in queries:
            raise CatalogError(str(path), "name",
                               f"query {spec.name!r} is also defined in "
                               f"{queries[spec.name].source}")
        queries[spec.name] = spec
    return Catalog(recordings, queries)

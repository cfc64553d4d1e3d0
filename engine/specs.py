"""The specs of the catalog (recordings, queries, their batch plans) and the error that names a
catalog file's field: what the query families and the runner read, without the loader
(:mod:`engine.catalog`), which needs the families to check a query."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from .errors import RepriseError
from .predicate import Pred

COLUMN_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int": pa.int64(),
    "double": pa.float64(),
    "bool": pa.bool_(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}

_DURATION = re.compile(r"^\s*(\d+)\s*(us|ms|s|m|h|d)\s*$")
_UNIT_US = {"us": 1, "ms": 1_000, "s": 1_000_000, "m": 60_000_000, "h": 3_600_000_000,
            "d": 86_400_000_000}
#: ``key: none``: one group for the whole recording, keyed by this constant derived column.
GLOBAL_KEY = "__global"
GLOBAL_VALUE = "all"


class CatalogError(RepriseError):
    """A catalog file is invalid; the message names the file, the field and the problem."""

    def __init__(self, source: str, fieldname: str, problem: str):
        self.source, self.field, self.problem = source, fieldname, problem
        super().__init__(f"{source}: field '{fieldname}': {problem}")


class UnknownName(RepriseError):
    """The catalog holds no recording or query of that name; the message lists the known ones."""


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
    #: ``where:``: the row predicate over the input's columns (derived ones included) that an
    #: event must pass to reach the operator, or None.
    where: Pred | None = None
    source: str = "<inline>"
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    #: ``input: {query: NAME}``: the query whose output this query reads (a pipeline stage),
    #: None when it reads a recording.
    upstream: Upstream | None = None

    @property
    def input(self) -> str:
        """The single input (qre, window and select queries): a recording, or the upstream
        query's name."""
        return next(iter(self.inputs.values()))

    @property
    def chain(self) -> list[QuerySpec]:
        """The stages of the query's pipeline: the one that reads a recording first, this
        query last (this query alone when it reads recordings)."""
        chain = [self]
        while chain[0].upstream is not None:
            chain.insert(0, chain[0].upstream.query)
        return chain

    def input_stream(self, recordings: dict[str, RecordingSpec]) -> RecordingSpec:
        """What the single-input query reads, before its derived columns: its recording, or
        its upstream query's output (``recordings``: the catalog's)."""
        return recordings[self.input] if self.upstream is None else self.upstream.stream


@dataclass(frozen=True)
class Upstream:
    """The query a pipeline stage reads and its output seen as a stream: ``stream`` names the
    output's columns (those of a catalog type) with the default key and event-time columns;
    ``order`` is the operator's emission order within one batch (the columns that sort it);
    ``keyed``: a reader must keep the upstream's key (see :mod:`engine.pipeline_catalog`)."""

    query: QuerySpec
    stream: RecordingSpec
    order: tuple[str, ...]
    keyed: bool


def check_fields(mapping: dict, known: tuple[str, ...], source: str, prefix: str) -> None:
    """Refuse a key of the nested ``mapping`` (the field ``prefix``) that is not in ``known``:
    ``<file>: field '<prefix>.<key>': unknown field (expected <known>)``."""
    unknown = sorted(set(map(str, mapping)) - set(known))
    if unknown:
        raise CatalogError(source, f"{prefix}.{unknown[0]}",
                           f"unknown field (expected {', '.join(known)})")

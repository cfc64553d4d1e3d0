"""Validate user files (CSV, JSONL, Parquet) against a recording's schema, without Spark or Delta.

Every data row ends up in exactly one of two tables: ``good`` (cast exactly to the recording's
Arrow schema, in file order) or ``quarantined`` (with a reason naming the column and the value).
Problems with a whole file raise :class:`IngestError` instead.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engine.catalog import COLUMN_TYPES, RecordingSpec
from engine.errors import RepriseError

QUARANTINE_SCHEMA = pa.schema([
    pa.field("source", pa.string()),
    pa.field("line", pa.int64()),
    pa.field("raw", pa.string()),
    pa.field("reason", pa.string()),
])

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US = timedelta(microseconds=1)
_SHOWN_MAX = 80
_ARTICLE = {"string": "a string", "int": "an int", "double": "a double", "bool": "a bool",
            "timestamp": "a timestamp"}


@dataclass(frozen=True)
class IngestResult:
    """The rows of one file that fit the recording, and the ones that did not."""

    source: str
    good: pa.Table
    quarantined: pa.Table

    @property
    def total(self) -> int:
        """Rows read: each one is in exactly one of ``good`` and ``quarantined``."""
        return self.good.num_rows + self.quarantined.num_rows


class IngestError(RepriseError):
    """A whole file cannot be ingested; the message names the file and the problem."""

    def __init__(self, source: str, problem: str):
        self.source, self.problem = source, problem
        super().__init__(f"{source}: {problem}")


class _Invalid(Exception):
    """One value (or line) does not fit; the message is the quarantine reason's detail."""


def _clip(text: str) -> str:
    return text if len(text) <= _SHOWN_MAX else text[:_SHOWN_MAX - 1] + "…"


def _in_int64(value: int, shown: str) -> int:
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise _Invalid(f"{shown} does not fit a 64-bit int")
    return value


def _epoch_us(text: str, shown: str) -> int:
    """ISO 8601 text to microseconds since the epoch, UTC; a value without offset is UTC."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise _Invalid(f"{shown} is not a timestamp") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _ONE_US


# Text values (CSV fields, Parquet string columns): never empty here, CSV maps '' to null first.

def _text_string(text: str) -> str:
    return text


def _text_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise _Invalid(f"{_clip(repr(text))} is not an int") from None
    return _in_int64(value, _clip(repr(text)))


def _text_double(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise _Invalid(f"{_clip(repr(text))} is not a double") from None


def _text_bool(text: str) -> bool:
    word = text.strip().lower()
    if word in ("true", "1"):
        return True
    if word in ("false", "0"):
        return False
    raise _Invalid(f"{_clip(repr(text))} is not a bool (expected true, false, 1 or 0)")


def _text_timestamp(text: str) -> int:
    return _epoch_us(text, _clip(repr(text)))


_TEXT_PARSERS: dict[str, Callable[[str], Any]] = {
    "string": _text_string, "int": _text_int, "double": _text_double, "bool": _text_bool,
    "timestamp": _text_timestamp,
}


# JSON values: decoded by json.loads, never None here.

def _show(value: Any) -> str:
    return _clip(json.dumps(value, ensure_ascii=False))


def _json_string(value: Any) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"expected a string, got {_show(value)}")
    return value


def _json_int(value: Any) -> int:
    if isinstance(value, float) and value.is_integer():
        return _in_int64(int(value), _show(value))
    if not isinstance(value, int) or isinstance(value, bool):
        raise _Invalid(f"{_show(value)} is not an int")
    return _in_int64(value, _show(value))


def _json_double(value: Any) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise _Invalid(f"{_show(value)} is not a double")
    try:
        return float(value)
    except OverflowError:
        raise _Invalid(f"{_show(value)} does not fit a double") from None


def _json_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Invalid(f"{_show(value)} is not a bool (expected true or false)")
    return value


def _json_timestamp(value: Any) -> int:
    if not isinstance(value, str):
        raise _Invalid(f"{_show(value)} is not a timestamp (expected an ISO 8601 string)")
    return _epoch_us(value, _show(value))


_JSON_PARSERS: dict[str, Callable[[Any], Any]] = {
    "string": _json_string, "int": _json_int, "double": _json_double, "bool": _json_bool,
    "timestamp": _json_timestamp,
}


def _quarantine_table(source: str, lines: list[int], raws: list[str],
                      reasons: list[str]) -> pa.Table:
    return pa.Table.from_arrays(
        [pa.array([source] * len(lines), pa.string()), pa.array(lines, pa.int64()),
         pa.array(raws, pa.string()), pa.array(reasons, pa.string())],
        schema=QUARANTINE_SCHEMA)


def _missing(spec: RecordingSpec, column: str) -> str | None:
    if column == spec.key:
        return f"missing key column {column!r}"
    if column == spec.time:
        return f"missing time column {column!r}"
    return None


class _Rows:
    """Collects the parsed rows and the quarantined lines of a CSV or JSONL file."""

    def __init__(self, spec: RecordingSpec, source: str):
        self.spec, self.source = spec, source
        self.values: dict[str, list[Any]] = {c: [] for c in spec.columns}
        self.lines: list[int] = []
        self.raws: list[str] = []
        self.reasons: list[str] = []

    def quarantine(self, line: int, raw: str, reason: str) -> None:
        self.lines.append(line)
        self.raws.append(raw)
        self.reasons.append(reason)

    def add(self, line: int, raw: str, fields: dict[str, Any],
            parsers: dict[str, Callable[[Any], Any]], problems: list[str]) -> None:
        """Parse ``fields`` (absent or None is null); keep the row or quarantine it."""
        row: dict[str, Any] = {}
        for column, typ in self.spec.columns.items():
            value = fields.get(column)
            if value is not None:
                try:
                    value = parsers[typ](value)
                except _Invalid as exc:
                    problems.append(f"column {column!r}: {exc}")
                    continue
            if value is None or value == "":
                missing = _missing(self.spec, column)
                if missing:
                    problems.append(missing)
            row[column] = value
        if problems:
            self.quarantine(line, raw, "; ".join(problems))
            return
        for column, value in row.items():
            self.values[column].append(value)

    def result(self) -> IngestResult:
        schema = self.spec.arrow_schema()
        good = pa.Table.from_arrays(
            [pa.array(self.values[f.name], f.type) for f in schema], schema=schema)
        return IngestResult(self.source, good,
                            _quarantine_table(self.source, self.lines, self.raws, self.reasons))


def _read_csv(path: Path, spec: RecordingSpec, source: str) -> IngestResult:
    rows = _Rows(spec, source)
    consumed: list[str] = []

    def tracked(lines: Iterator[str]) -> Iterator[str]:
        for text in lines:
            consumed.append(text)
            yield text

    header: list[str] | None = None
    line_no = 0
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(tracked(handle))
        while True:
            consumed.clear()
            try:
                record: list[str] | None = next(reader)
                error = None
            except StopIteration:
                break
            except csv.Error as exc:
                record, error = None, f"malformed CSV: {exc}"
            start, line_no = line_no + 1, line_no + len(consumed)
            raw = "".join(consumed).rstrip("\r\n")
            if not raw.strip():
                continue
            if header is None:
                if record is None:
                    raise IngestError(source, f"header line {start}: {error}")
                header = _check_header(record, spec, source)
            elif record is None:
                rows.quarantine(start, raw, str(error))
            elif len(record) != len(header):
                rows.quarantine(start, raw,
                                f"line has {len(record)} fields, header has {len(header)}")
            else:
                fields = {name: value or None for name, value in zip(header, record, strict=True)}
                rows.add(start, raw, fields, _TEXT_PARSERS, [])
    if header is None:
        raise IngestError(source, "empty file: no header line")
    return rows.result()


def _names(columns: list[str]) -> str:
    return ", ".join(repr(c) for c in columns)


def _check_header(header: list[str], spec: RecordingSpec, source: str) -> list[str]:
    problems = []
    missing = [c for c in spec.columns if c not in header]
    if missing:
        problems.append(f"header is missing column(s) {_names(missing)}")
    unknown = [c for c in header if c not in spec.columns]
    if unknown:
        problems.append(f"header has unknown column(s) {_names(unknown)}")
    repeated = sorted({c for c in header if header.count(c) > 1})
    if repeated:
        problems.append(f"header repeats column(s) {_names(repeated)}")
    if problems:
        raise IngestError(source, "; ".join(problems))
    return header


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for name, value in pairs:
        if name in obj:
            raise _Invalid(f"duplicate key {name!r}")
        obj[name] = value
    return obj


def _no_constant(name: str) -> Any:
    raise _Invalid(f"{name} is not allowed")


_JSON_KINDS = {list: "an array", str: "a string", bool: "a boolean", int: "a number",
               float: "a number", type(None): "null"}


def _read_jsonl(path: Path, spec: RecordingSpec, source: str) -> IngestResult:
    rows = _Rows(spec, source)
    with path.open(encoding="utf-8-sig") as handle:
        for line_no, text in enumerate(handle, 1):
            raw = text.rstrip("\n")
            if not raw.strip():
                continue
            try:
                doc = json.loads(raw, object_pairs_hook=_unique_object, parse_constant=_no_constant)
            except json.JSONDecodeError as exc:
                rows.quarantine(line_no, raw, f"not valid JSON: {exc.msg} at column {exc.colno}")
                continue
            except _Invalid as exc:
                rows.quarantine(line_no, raw, f"not valid JSON: {exc}")
                continue
            if not isinstance(doc, dict):
                kind = _JSON_KINDS[type(doc)]
                rows.quarantine(line_no, raw, f"expected a JSON object, got {kind}")
                continue
            unknown = [f"unknown column {name!r}" for name in doc if name not in spec.columns]
            rows.add(line_no, raw, doc, _JSON_PARSERS, unknown)
    return rows.result()


def _castable(source_type: pa.DataType, typ: str) -> bool:
    t = pa.types
    if typ in ("int", "double"):
        return t.is_integer(source_type) or t.is_floating(source_type) or t.is_decimal(source_type)
    if typ == "bool":
        return t.is_boolean(source_type)
    if typ == "timestamp":
        return t.is_timestamp(source_type) or t.is_date(source_type)
    return False


def _cast_column(data: pa.ChunkedArray, column: str, typ: str,
                 source: str) -> tuple[pa.Array, dict[int, str]]:
    """Cast one Parquet column to the spec type; failing rows become null, with their reason."""
    target = COLUMN_TYPES[typ]
    if pa.types.is_dictionary(data.type):
        data = data.cast(data.type.value_type)
    array = data.combine_chunks()
    if pa.types.is_null(array.type):
        return pa.nulls(len(array), target), {}
    t = pa.types
    if t.is_string(array.type) or t.is_large_string(array.type) or t.is_string_view(array.type):
        parser, values, errors = _TEXT_PARSERS[typ], [], {}
        for i, text in enumerate(array.to_pylist()):
            try:
                values.append(None if text is None else parser(text))
            except _Invalid as exc:
                values.append(None)
                errors[i] = str(exc)
        return pa.array(values, target), errors
    if not _castable(array.type, typ):
        raise IngestError(source, f"column {column!r} has type {array.type}, "
                                  f"which cannot hold {_ARTICLE[typ]}")
    if t.is_timestamp(array.type) and array.type.tz is None:
        array = array.cast(pa.timestamp(array.type.unit, tz="UTC"))  # naive means UTC
    try:
        return pc.cast(array, target), {}
    except pa.ArrowInvalid:
        pass
    cells, errors = [], {}
    for i in range(len(array)):
        cell = array.slice(i, 1)
        try:
            cells.append(pc.cast(cell, target))
        except pa.ArrowInvalid as exc:
            cells.append(pa.nulls(1, target))
            errors[i] = f"{_clip(str(cell[0].as_py()))} cannot be converted to {typ}: {exc}"
    return pa.concat_arrays(cells), errors


def _read_parquet(path: Path, spec: RecordingSpec, source: str) -> IngestResult:
    try:
        table = pq.read_table(path)
    except pa.ArrowException as exc:
        raise IngestError(source, f"not a readable Parquet file: {exc}") from exc
    names = table.column_names
    problems = []
    required = [c for c in (spec.key, spec.time) if c not in names]
    if required:
        problems.append(f"missing required column(s) {_names(required)}")
    unknown = [c for c in names if c not in spec.columns]
    if unknown:
        problems.append(f"unknown column(s) {_names(unknown)}")
    repeated = sorted({c for c in names if names.count(c) > 1})
    if repeated:
        problems.append(f"repeated column(s) {_names(repeated)}")
    if problems:
        raise IngestError(source, "; ".join(problems))

    reasons: dict[int, list[str]] = {}
    arrays = []
    for column, typ in spec.columns.items():
        if column not in names:
            arrays.append(pa.nulls(table.num_rows, COLUMN_TYPES[typ]))
            continue
        array, errors = _cast_column(table.column(column), column, typ, source)
        for i, error in errors.items():
            reasons.setdefault(i, []).append(f"column {column!r}: {error}")
        missing = _missing(spec, column)
        if missing:
            absent = pc.is_null(array)
            if pa.types.is_string(array.type):
                absent = pc.or_(absent, pc.fill_null(pc.equal(array, ""), False))
            for i in pc.indices_nonzero(absent).to_pylist():
                if i not in errors:
                    reasons.setdefault(i, []).append(missing)
        arrays.append(array)

    schema = spec.arrow_schema()
    bad = sorted(reasons)
    good_rows = pa.array(sorted(set(range(table.num_rows)) - set(reasons)), pa.int64())
    good = pa.Table.from_arrays(arrays, schema=schema).take(good_rows)
    bad_rows = table.take(pa.array(bad, pa.int64())).to_pylist()
    raws = [json.dumps(row, default=str) for row in bad_rows]
    return IngestResult(source, good, _quarantine_table(
        source, [i + 1 for i in bad], raws, ["; ".join(reasons[i]) for i in bad]))


_READERS: dict[str, Callable[[Path, RecordingSpec, str], IngestResult]] = {
    ".csv": _read_csv, ".jsonl": _read_jsonl, ".ndjson": _read_jsonl, ".parquet": _read_parquet,
}


def read_file(path: str | Path, spec: RecordingSpec) -> IngestResult:
    """Validate one file against ``spec``; dispatch on extension: .csv, .jsonl / .ndjson, .parquet.

    Raises :class:`IngestError` for whole-file problems (unknown extension, unreadable file, CSV
    header or Parquet columns not matching the spec); row problems go to ``quarantined``.
    """
    path = Path(path)
    source = str(path)
    reader = _READERS.get(path.suffix.lower())
    if reader is None:
        raise IngestError(source, f"unknown extension {path.suffix or '(none)'!r}; "
                                  f"expected one of {', '.join(_READERS)}")
    try:
        return reader(path, spec, source)
    except OSError as exc:
        raise IngestError(source, f"cannot read file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise IngestError(source, f"not valid UTF-8 text: {exc.reason}") from exc

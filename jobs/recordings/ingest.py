"""Validate user files (CSV, JSONL, Parquet) against a recording's schema, without Spark or Delta.

Every data row ends up in exactly one of two tables: ``good`` (cast exactly to the recording's
Arrow schema, in file order) or ``quarantined`` (with a reason naming the column and the value).
The rules are the same in every format (values: :mod:`jobs.recordings.values`):

- CSV and JSONL hold one record per physical line (a line ends at ``\\n``, ``\\r\\n`` or ``\\r``);
  a CSV quote that is not closed on its own line is an error of that line, and the next line is
  read on its own. A line that is not UTF-8 is quarantined with its line number. Blank lines are
  skipped.
- A text value has no length limit of its own in any format: a CSV field, a JSON string and a
  Parquet string value are taken whole, however long. (A CSV field is never longer than its
  line, which is read whole in every line format, so this costs no memory beyond the line.)
- A row with a column the recording does not declare (CSV header, Parquet column, JSON key), a
  repeated column, or no key or time value is quarantined; a declared column that is absent is
  null.
- An empty file (no bytes but blanks), a binary file (a NUL byte in its first 8 KiB), an
  unreadable file or Parquet file, and a CSV header line that cannot be read raise
  :class:`IngestError`: these are problems of the whole file.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engine.errors import RepriseError
from engine.specs import COLUMN_TYPES, RecordingSpec
from jobs.recordings.values import (
    ARTICLE,
    JSON_PARSERS,
    TEXT_PARSERS,
    InvalidValue,
    clip,
    parse_json,
)

QUARANTINE_SCHEMA = pa.schema([
    pa.field("source", pa.string()),
    pa.field("line", pa.int64()),
    pa.field("raw", pa.string()),
    pa.field("reason", pa.string()),
])

_PROBE = 8192  # bytes looked at for a NUL byte (a binary file)
_BOM = b"\xef\xbb\xbf"


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


def _column_problems(names: list[str], spec: RecordingSpec) -> list[str]:
    """Problems every row of a CSV or Parquet file has through its column names."""
    unknown = [f"unknown column {c!r}" for c in names if c not in spec.columns]
    repeated = [f"repeated column {c!r}" for c in sorted({c for c in names if names.count(c) > 1})]
    return unknown + repeated


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
                except InvalidValue as exc:
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


def _lines(path: Path, source: str) -> Iterator[tuple[int, str, str | None]]:
    """Each physical line as (line number, text, problem); problem is None for UTF-8 text.

    A line that is not UTF-8 comes with its bytes escaped (``\\xff``) and the problem.
    """
    with path.open("rb") as handle:
        nul = handle.read(_PROBE).find(b"\0")
        if nul >= 0:
            raise IngestError(source, f"binary file (a NUL byte at offset {nul}); expected "
                                      "UTF-8 text")
        handle.seek(0)
        number = 0
        for chunk in handle:
            for line in chunk.splitlines():
                number += 1
                if number == 1 and line.startswith(_BOM):
                    line = line[len(_BOM):]
                try:
                    yield number, line.decode("utf-8"), None
                except UnicodeDecodeError as exc:
                    yield (number, line.decode("utf-8", "backslashreplace"),
                           f"not valid UTF-8: byte 0x{line[exc.start]:02x} at byte "
                           f"{exc.start + 1} of the line")


def _allow_fields_of(length: int) -> None:
    """Raise the csv module's field limit (process-wide, 131,072 by default) to ``length``.

    Only ever raised, never lowered, so concurrent readers cannot undo each other.
    """
    if length > csv.field_size_limit():
        csv.field_size_limit(length)


def _csv_record(text: str) -> list[str]:
    """The fields of one CSV line; raises InvalidValue for malformed quoting."""
    _allow_fields_of(len(text))
    try:
        return next(csv.reader([text], strict=True))
    except csv.Error as exc:
        problem = str(exc)
        if problem == "unexpected end of data":
            problem = "a quoted field is not closed on its line (records are one per line)"
        raise InvalidValue(f"malformed CSV: {problem}") from None


def _read_csv(path: Path, spec: RecordingSpec, source: str) -> IngestResult:
    rows = _Rows(spec, source)
    header: list[str] | None = None
    shared: list[str] = []
    for number, text, problem in _lines(path, source):
        if not text.strip():
            continue
        record: list[str] = []
        if problem is None:
            try:
                record = _csv_record(text)
            except InvalidValue as exc:
                problem = str(exc)
        if header is None:
            if problem is not None:
                raise IngestError(source, f"line {number} (the header): {problem}")
            header, shared = record, _column_problems(record, spec)
        elif problem is not None:
            rows.quarantine(number, text, problem)
        elif len(record) != len(header):
            rows.quarantine(number, text,
                            f"line has {len(record)} fields, header has {len(header)}")
        else:
            fields = {name: value or None for name, value in zip(header, record, strict=True)}
            rows.add(number, text, fields, TEXT_PARSERS, list(shared))
    if header is None:
        raise IngestError(source, "empty file: no header line")
    return rows.result()


_JSON_KINDS = {list: "an array", str: "a string", bool: "a boolean", Decimal: "a number",
               type(None): "null"}


def _read_jsonl(path: Path, spec: RecordingSpec, source: str) -> IngestResult:
    rows = _Rows(spec, source)
    blank = True
    for number, text, problem in _lines(path, source):
        if not text.strip():
            continue
        blank = False
        if problem is not None:
            rows.quarantine(number, text, problem)
            continue
        try:
            doc = parse_json(text)
        except InvalidValue as exc:
            rows.quarantine(number, text, f"not valid JSON: {exc}")
            continue
        if not isinstance(doc, dict):
            rows.quarantine(number, text, f"expected a JSON object, got {_JSON_KINDS[type(doc)]}")
            continue
        unknown = [f"unknown column {name!r}" for name in doc if name not in spec.columns]
        rows.add(number, text, doc, JSON_PARSERS, unknown)
    if blank:
        raise IngestError(source, "empty file: no lines")
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


def _is_text(typ: pa.DataType) -> bool:
    t = pa.types
    return t.is_string(typ) or t.is_large_string(typ) or t.is_string_view(typ)


def _texts(array: pa.Array) -> list[str | bytes | None]:
    """The values of a string column; a value that is not UTF-8 (Arrow does not check) as bytes."""
    try:
        return array.to_pylist()
    except UnicodeDecodeError:
        values: list[str | bytes | None] = []
        for raw in array.cast(pa.large_binary()).to_pylist():
            try:
                values.append(None if raw is None else raw.decode("utf-8"))
            except UnicodeDecodeError:
                values.append(raw)
        return values


def _escaped(raw: bytes) -> str:
    return clip("'" + raw.decode("utf-8", "backslashreplace") + "'")


def _raw_rows(table: pa.Table) -> list[str]:
    """Each row of a Parquet table as JSON text (bytes that are not UTF-8 shown escaped)."""
    plain = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c
             for c in table.combine_chunks().columns]
    columns = [[v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else v
                for v in _texts(c)] if _is_text(c.type) else c.to_pylist() for c in plain]
    return [json.dumps(dict(zip(table.column_names, row, strict=True)), default=str)
            for row in zip(*columns, strict=True)]


def _shown(value: Any) -> str:
    return clip(json.dumps(value, ensure_ascii=False, default=str))


def _cast_column(data: pa.ChunkedArray, typ: str) -> tuple[pa.Array, dict[int, str]]:
    """Cast one Parquet column to the spec type; failing rows become null, with their reason."""
    target = COLUMN_TYPES[typ]
    if pa.types.is_dictionary(data.type):
        data = data.cast(data.type.value_type)
    array = data.combine_chunks()
    if pa.types.is_null(array.type):
        return pa.nulls(len(array), target), {}
    t = pa.types
    if _is_text(array.type):
        parser, values, errors = TEXT_PARSERS[typ], [], {}
        for i, text in enumerate(_texts(array)):
            try:
                if isinstance(text, bytes):
                    raise InvalidValue(f"{_escaped(text)} is not valid UTF-8")
                values.append(None if text is None else parser(text))
            except InvalidValue as exc:
                values.append(None)
                errors[i] = str(exc)
        return pa.array(values, target), errors
    if not _castable(array.type, typ):
        problem = f"is not {ARTICLE[typ]} (the column has type {array.type})"
        errors = {i: f"{_shown(v)} {problem}" for i, v in enumerate(array.to_pylist())
                  if v is not None}
        return pa.nulls(len(array), target), errors
    if t.is_timestamp(array.type) and array.type.tz is None:
        array = array.cast(pa.timestamp(array.type.unit, tz="UTC"))  # naive means UTC
    try:
        cast, errors = pc.cast(array, target), {}
    except pa.ArrowInvalid:
        cells, errors = [], {}
        for i in range(len(array)):
            cell = array.slice(i, 1)
            try:
                cells.append(pc.cast(cell, target))
            except pa.ArrowInvalid as exc:
                cells.append(pa.nulls(1, target))
                errors[i] = f"{clip(str(cell[0].as_py()))} cannot be converted to {typ}: {exc}"
        cast = pa.concat_arrays(cells)
    if typ == "double":
        infinite = pc.fill_null(pc.invert(pc.is_finite(cast)), False)
        for i in pc.indices_nonzero(infinite).to_pylist():
            errors[i] = f"{cast[i].as_py()} is not a finite double"
        cast = pc.if_else(infinite, pa.scalar(None, target), cast)
    return cast, errors


def _read_parquet(path: Path, spec: RecordingSpec, source: str) -> IngestResult:
    if path.stat().st_size == 0:
        raise IngestError(source, "empty file: no Parquet data")
    try:
        table = pq.read_table(path)
    except pa.ArrowException as exc:
        raise IngestError(source, f"not a readable Parquet file: {exc}") from exc
    names = table.column_names
    shared = _column_problems(names, spec)
    reasons: dict[int, list[str]] = {i: list(shared) for i in range(table.num_rows)} \
        if shared else {}
    arrays = []
    for column, typ in spec.columns.items():
        missing = _missing(spec, column)
        if column not in names:
            arrays.append(pa.nulls(table.num_rows, COLUMN_TYPES[typ]))
            for i in range(table.num_rows) if missing else ():
                reasons.setdefault(i, []).append(missing)
            continue
        array, errors = _cast_column(table.column(names.index(column)), typ)
        for i, error in errors.items():
            reasons.setdefault(i, []).append(f"column {column!r}: {error}")
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
    raws = _raw_rows(table.take(pa.array(bad, pa.int64())))
    return IngestResult(source, good, _quarantine_table(
        source, [i + 1 for i in bad], raws, ["; ".join(reasons[i]) for i in bad]))


_READERS: dict[str, Callable[[Path, RecordingSpec, str], IngestResult]] = {
    ".csv": _read_csv, ".jsonl": _read_jsonl, ".ndjson": _read_jsonl, ".parquet": _read_parquet,
}


def read_file(path: str | Path, spec: RecordingSpec) -> IngestResult:
    """Validate one file against ``spec``; dispatch on extension: .csv, .jsonl / .ndjson, .parquet.

    Raises :class:`IngestError` for whole-file problems (unknown extension, unreadable, empty or
    binary file, unreadable CSV header); row problems go to ``quarantined``.
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

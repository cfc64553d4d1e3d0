"""The ingest rules are the same in CSV, JSONL and Parquet: one table test per rule.

Each case writes the same rows in the three formats and expects the same good rows, the same
quarantined data rows (counted from 1 in each format's own data rows) and reasons saying why.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.specs import RecordingSpec
from jobs.recordings.ingest import IngestError, IngestResult, read_file

SPEC = RecordingSpec(name="r", columns={"k": "string", "ts": "timestamp", "n": "int",
                                        "x": "double"}, key="k", time="ts")
T = "2026-01-01T00:00:00Z"
FORMATS = ("csv", "jsonl", "parquet")
HUGE = "7" * 5000  # past Python's 4,300-digit int-string conversion limit


def at(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def data_rows(result: IngestResult, fmt: str) -> list[int]:
    """Quarantined rows as positions among the file's data rows (a CSV header is not one)."""
    offset = 1 if fmt == "csv" else 0
    return [line - offset for line in result.quarantined["line"].to_pylist()]


def reasons(result: IngestResult) -> list[str]:
    return result.quarantined["reason"].to_pylist()


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    path.write_text("\n".join(",".join(r) for r in [header, *rows]) + "\n", encoding="utf-8")
    return path


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# ---------------------------------------------------------------- an integral decimal is an int

def integral(fmt: str, tmp: Path) -> Path:
    if fmt == "csv":
        return write_csv(tmp / "f.csv", ["k", "ts", "n"],
                         [["a", T, "72.0"], ["b", T, "72.5"], ["c", T, "7.2e1"], ["d", T, "72"]])
    if fmt == "jsonl":
        return write_jsonl(tmp / "f.jsonl", [
            f'{{"k": "a", "ts": "{T}", "n": 72.0}}', f'{{"k": "b", "ts": "{T}", "n": 72.5}}',
            f'{{"k": "c", "ts": "{T}", "n": 7.2e1}}', f'{{"k": "d", "ts": "{T}", "n": 72}}'])
    path = tmp / "f.parquet"
    pq.write_table(pa.table({"k": list("abcd"), "ts": [T] * 4,
                             "n": pa.array([72.0, 72.5, 72.0, 72.0], pa.float64())}), path)
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_integral_decimal_is_an_int_in_every_format(tmp_path: Path, fmt: str) -> None:
    result = read_file(integral(fmt, tmp_path), SPEC)
    assert result.good["k"].to_pylist() == ["a", "c", "d"]
    assert result.good["n"].to_pylist() == [72, 72, 72]
    assert data_rows(result, fmt) == [2]
    assert "72.5" in reasons(result)[0] and "int" in reasons(result)[0]


# ---------------------------------------------------------------- digits past the microsecond

NANOS = "2026-01-01T00:00:00.123456789+00:00"
MICROS_PADDED = "2026-01-01T00:00:00.123456000+00:00"


def nanoseconds(fmt: str, tmp: Path) -> Path:
    if fmt == "csv":
        return write_csv(tmp / "f.csv", ["k", "ts"], [["a", NANOS], ["b", MICROS_PADDED]])
    if fmt == "jsonl":
        return write_jsonl(tmp / "f.jsonl", [json.dumps({"k": "a", "ts": NANOS}),
                                             json.dumps({"k": "b", "ts": MICROS_PADDED})])
    base = 1_767_225_600 * 10**9
    path = tmp / "f.parquet"
    pq.write_table(pa.table({"k": ["a", "b"], "ts": pa.array(
        [base + 123_456_789, base + 123_456_000], pa.timestamp("ns", tz="UTC"))}), path)
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_nanosecond_digits_are_quarantined_in_every_format(tmp_path: Path, fmt: str) -> None:
    result = read_file(nanoseconds(fmt, tmp_path), SPEC)
    assert result.good.to_pylist() == [
        {"k": "b", "ts": at(2026, 1, 1, 0, 0, 0, 123456), "n": None, "x": None}]
    assert data_rows(result, fmt) == [1]
    assert reasons(result)[0].startswith("column 'ts': ")


def test_nanosecond_digits_in_a_parquet_string_column_are_quarantined(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"k": ["a", "b"], "ts": [NANOS, MICROS_PADDED]}), path)
    result = read_file(path, SPEC)
    assert result.good["k"].to_pylist() == ["b"]
    assert reasons(result) == [f"column 'ts': {NANOS!r} has digits past the microsecond "
                               "(timestamps are stored in microseconds)"]


# ---------------------------------------------------------------- an empty file

def empty(fmt: str, tmp: Path) -> Path:
    path = tmp / f"f.{fmt}"
    path.write_bytes(b"" if fmt == "parquet" else b"\n  \n")
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_empty_file_is_an_error_in_every_format(tmp_path: Path, fmt: str) -> None:
    path = empty(fmt, tmp_path)
    with pytest.raises(IngestError) as err:
        read_file(path, SPEC)
    assert str(err.value).startswith(f"{path}: empty file")


# ---------------------------------------------------------------- an unknown column

def unknown_column(fmt: str, tmp: Path) -> Path:
    if fmt == "csv":
        return write_csv(tmp / "f.csv", ["k", "ts", "pulse"], [["a", T, "1"], ["b", T, "2"]])
    if fmt == "jsonl":
        return write_jsonl(tmp / "f.jsonl", [f'{{"k": "a", "ts": "{T}", "pulse": 1}}',
                                             f'{{"k": "b", "ts": "{T}", "pulse": 2}}'])
    path = tmp / "f.parquet"
    pq.write_table(pa.table({"k": ["a", "b"], "ts": [T, T], "pulse": [1, 2]}), path)
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_unknown_column_quarantines_its_rows_in_every_format(tmp_path: Path,
                                                                fmt: str) -> None:
    result = read_file(unknown_column(fmt, tmp_path), SPEC)
    assert result.good.num_rows == 0
    assert data_rows(result, fmt) == [1, 2]
    assert reasons(result) == ["unknown column 'pulse'"] * 2


# ---------------------------------------------------------------- a declared column left out

def absent_column(fmt: str, tmp: Path) -> Path:
    if fmt == "csv":
        return write_csv(tmp / "f.csv", ["k", "ts"], [["a", T]])
    if fmt == "jsonl":
        return write_jsonl(tmp / "f.jsonl", [f'{{"k": "a", "ts": "{T}"}}'])
    path = tmp / "f.parquet"
    pq.write_table(pa.table({"k": ["a"], "ts": [T]}), path)
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_declared_column_left_out_is_null_in_every_format(tmp_path: Path, fmt: str) -> None:
    result = read_file(absent_column(fmt, tmp_path), SPEC)
    assert result.good.to_pylist() == [{"k": "a", "ts": at(2026, 1, 1), "n": None, "x": None}]
    assert result.quarantined.num_rows == 0


# ---------------------------------------------------------------- text that is not UTF-8

def not_utf8(fmt: str, tmp: Path) -> Path:
    if fmt == "csv":
        path = tmp / "f.csv"
        path.write_bytes(f"k,ts\na,{T}\nb\xff,{T}\nc,{T}\n".encode("latin-1"))
        return path
    if fmt == "jsonl":
        path = tmp / "f.jsonl"
        path.write_bytes(f'{{"k": "a", "ts": "{T}"}}\n{{"k": "b\xff", "ts": "{T}"}}\n'
                         f'{{"k": "c", "ts": "{T}"}}\n'.encode("latin-1"))
        return path
    keys = pa.Array.from_buffers(pa.string(), 3, [None, pa.py_buffer(
        pa.array([0, 1, 3, 4], pa.int32()).buffers()[1]), pa.py_buffer(b"ab\xffc")])
    path = tmp / "f.parquet"
    pq.write_table(pa.table({"k": keys, "ts": [T] * 3}), path)
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_value_that_is_not_utf8_quarantines_its_row_only(tmp_path: Path, fmt: str) -> None:
    result = read_file(not_utf8(fmt, tmp_path), SPEC)
    assert result.good["k"].to_pylist() == ["a", "c"]
    assert data_rows(result, fmt) == [2]
    assert "not valid UTF-8" in reasons(result)[0]
    assert "\\xff" in result.quarantined["raw"][0].as_py()


def test_a_dictionary_encoded_parquet_value_that_is_not_utf8_quarantines_its_row(
        tmp_path: Path) -> None:
    keys = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(
        pa.array([0, 1, 3], pa.int32()).buffers()[1]), pa.py_buffer(b"ab\xff")])
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"k": pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()),
                                                                 keys), "ts": [T, T]}), path)
    result = read_file(path, SPEC)
    assert result.good["k"].to_pylist() == ["a"]
    assert reasons(result) == ["column 'k': 'b\\xff' is not valid UTF-8"]
    assert json.loads(result.quarantined["raw"][0].as_py())["k"] == "b\\xff"


# ---------------------------------------------------------------- numbers past any limit

def huge_numbers(fmt: str, tmp: Path) -> Path:
    if fmt == "csv":
        return write_csv(tmp / "f.csv", ["k", "ts", "n", "x"],
                         [["a", T, HUGE, ""], ["b", T, "", HUGE], ["c", T, "1", "2"]])
    if fmt == "jsonl":
        return write_jsonl(tmp / "f.jsonl", [
            f'{{"k": "a", "ts": "{T}", "n": {HUGE}}}', f'{{"k": "b", "ts": "{T}", "x": {HUGE}}}',
            f'{{"k": "c", "ts": "{T}", "n": 1, "x": 2}}'])
    path = tmp / "f.parquet"
    pq.write_table(pa.table({"k": list("abc"), "ts": [T] * 3, "n": [HUGE, None, "1"],
                             "x": [None, HUGE, "2"]}), path)
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_numbers_of_thousands_of_digits_are_quarantined(tmp_path: Path, fmt: str) -> None:
    result = read_file(huge_numbers(fmt, tmp_path), SPEC)
    assert result.good.to_pylist() == [{"k": "c", "ts": at(2026, 1, 1), "n": 1, "x": 2.0}]
    assert data_rows(result, fmt) == [1, 2]
    first, second = reasons(result)
    assert first.startswith("column 'n': ") and first.endswith("does not fit a 64-bit int")
    assert second.startswith("column 'x': ") and second.endswith("does not fit a double")


# ---------------------------------------------------------------- a double is finite

def not_finite(fmt: str, tmp: Path) -> Path:
    if fmt == "csv":
        return write_csv(tmp / "f.csv", ["k", "ts", "x"],
                         [["a", T, "nan"], ["b", T, "-inf"], ["c", T, "0.5"]])
    if fmt == "jsonl":
        return write_jsonl(tmp / "f.jsonl", [
            f'{{"k": "a", "ts": "{T}", "x": NaN}}', f'{{"k": "b", "ts": "{T}", "x": -Infinity}}',
            f'{{"k": "c", "ts": "{T}", "x": 0.5}}'])
    path = tmp / "f.parquet"
    pq.write_table(pa.table({"k": list("abc"), "ts": [T] * 3,
                             "x": [float("nan"), float("-inf"), 0.5]}), path)
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_nan_and_infinities_are_quarantined_in_every_format(tmp_path: Path, fmt: str) -> None:
    result = read_file(not_finite(fmt, tmp_path), SPEC)
    assert result.good["x"].to_pylist() == [0.5]
    assert data_rows(result, fmt) == [1, 2]


# ---------------------------------------------------------------- a value of the wrong type

def wrong_type(fmt: str, tmp: Path) -> Path:
    if fmt == "csv":
        return write_csv(tmp / "f.csv", ["k", "ts", "n"], [["a", T, "true"], ["b", T, ""]])
    if fmt == "jsonl":
        return write_jsonl(tmp / "f.jsonl", [f'{{"k": "a", "ts": "{T}", "n": true}}',
                                             f'{{"k": "b", "ts": "{T}", "n": null}}'])
    path = tmp / "f.parquet"
    pq.write_table(pa.table({"k": ["a", "b"], "ts": [T, T], "n": [True, None]}), path)
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_value_of_the_wrong_type_quarantines_its_row(tmp_path: Path, fmt: str) -> None:
    result = read_file(wrong_type(fmt, tmp_path), SPEC)
    assert result.good["k"].to_pylist() == ["b"]
    assert data_rows(result, fmt) == [1]
    assert reasons(result)[0].startswith("column 'n': ") and "not an int" in reasons(result)[0]


# ---------------------------------------------------------------- long text values

NOTED = RecordingSpec(name="n", columns={"k": "string", "ts": "timestamp", "note": "string"},
                      key="k", time="ts")
CSV_FIELD_LIMIT = 131_072  # Python's csv module default: a field past it used to be refused
LONG_TEXTS = ["y" * (CSV_FIELD_LIMIT - 1), "y" * CSV_FIELD_LIMIT, "y" * (CSV_FIELD_LIMIT + 1),
              "y" * 200_000, 'a,"b\'' + "y" * 200_000]


def long_texts(fmt: str, tmp: Path) -> Path:
    if fmt == "csv":
        quoted = ['"' + v.replace('"', '""') + '"' for v in LONG_TEXTS]
        return write_csv(tmp / "f.csv", ["k", "ts", "note"],
                         [[f"k{i}", T, v] for i, v in enumerate(quoted)])
    if fmt == "jsonl":
        return write_jsonl(tmp / "f.jsonl", [json.dumps({"k": f"k{i}", "ts": T, "note": v})
                                             for i, v in enumerate(LONG_TEXTS)])
    path = tmp / "f.parquet"
    pq.write_table(pa.table({"k": [f"k{i}" for i in range(len(LONG_TEXTS))],
                             "ts": [T] * len(LONG_TEXTS), "note": LONG_TEXTS}), path)
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_text_values_have_no_length_limit_in_any_format(tmp_path: Path, fmt: str) -> None:
    result = read_file(long_texts(fmt, tmp_path), NOTED)
    assert result.quarantined.num_rows == 0
    assert result.good["note"].to_pylist() == LONG_TEXTS


def test_a_long_unquoted_csv_field_is_taken_whole_beside_short_ones(tmp_path: Path) -> None:
    long = "z" * (CSV_FIELD_LIMIT + 1)
    path = write_csv(tmp_path / "f.csv", ["k", "ts", "note"],
                     [["a", T, long], ["b", T, "short"], [long, T, "key"]])
    result = read_file(path, NOTED)
    assert result.good.to_pylist() == [
        {"k": "a", "ts": at(2026, 1, 1), "note": long},
        {"k": "b", "ts": at(2026, 1, 1), "note": "short"},
        {"k": long, "ts": at(2026, 1, 1), "note": "key"}]


# ---------------------------------------------------------------- exact integers

def exact(fmt: str, tmp: Path) -> Path:
    values = ["9007199254740993.0", "1e999999999", "1e-999999999", "-0.0"]
    if fmt == "csv":
        return write_csv(tmp / "f.csv", ["k", "ts", "n"],
                         [[f"k{i}", T, v] for i, v in enumerate(values)])
    if fmt == "jsonl":
        return write_jsonl(tmp / "f.jsonl", [f'{{"k": "k{i}", "ts": "{T}", "n": {v}}}'
                                             for i, v in enumerate(values)])
    path = tmp / "f.parquet"
    pq.write_table(pa.table({"k": [f"k{i}" for i in range(4)], "ts": [T] * 4, "n": values}),
                   path)
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_integral_decimals_are_exact_and_huge_exponents_are_cheap(tmp_path: Path,
                                                                  fmt: str) -> None:
    result = read_file(exact(fmt, tmp_path), SPEC)
    assert result.good["n"].to_pylist() == [9007199254740993, 0]  # no float rounding
    assert data_rows(result, fmt) == [2, 3]
    assert reasons(result)[0].endswith("does not fit a 64-bit int")
    assert reasons(result)[1].endswith("is not an int")


CASES: dict[str, Callable[[str, Path], Path]] = {
    "integral": integral, "nanoseconds": nanoseconds, "unknown": unknown_column,
    "absent": absent_column, "not_utf8": not_utf8, "huge": huge_numbers,
    "not_finite": not_finite, "wrong_type": wrong_type, "exact": exact,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_three_formats_agree_row_for_row(tmp_path: Path, case: str) -> None:
    outcomes = []
    for fmt in FORMATS:
        folder = tmp_path / fmt
        folder.mkdir()
        result = read_file(CASES[case](fmt, folder), SPEC)
        outcomes.append((result.good.to_pylist(), data_rows(result, fmt)))
    assert outcomes[0] == outcomes[1] == outcomes[2]

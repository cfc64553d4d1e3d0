"""Validation and parsing of user files appended to a recording (jobs.recordings.ingest)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.specs import RecordingSpec
from jobs.recordings.ingest import QUARANTINE_SCHEMA, IngestError, IngestResult, read_file

VITALS = RecordingSpec(
    name="vitals",
    columns={"patient_id": "string", "ts": "timestamp", "heart_rate": "int", "spo2": "int"},
    key="patient_id", time="ts")

EVENTS = RecordingSpec(
    name="events",
    columns={"user": "string", "ts": "timestamp", "score": "double", "active": "bool",
             "note": "string"},
    key="user", time="ts")


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def quarantine(result: IngestResult) -> list[tuple[int, str]]:
    return list(zip(result.quarantined["line"].to_pylist(),
                    result.quarantined["reason"].to_pylist(), strict=True))


def check_shapes(result: IngestResult, spec: RecordingSpec) -> None:
    assert result.good.schema == spec.arrow_schema()
    assert result.quarantined.schema == QUARANTINE_SCHEMA
    assert set(result.quarantined["source"].to_pylist()) <= {result.source}


# ---------------------------------------------------------------- CSV

VITALS_CSV = """\
patient_id,ts,heart_rate,spo2
p1,2026-01-01T10:00:00Z,72,98
p2,2026-01-01T10:00:01Z,abc,97
,2026-01-01T10:00:02Z,70,96
p3,,70,96
p4,2026-01-01T10:00:03Z,70

p5,2026-13-01,70,96
p6,2026-01-01T10:00:04Z,1.5,95
p7,2026-01-01 12:30:00+02:00,80,
"""


def test_csv_keeps_good_rows_and_quarantines_each_bad_line(tmp_path: Path) -> None:
    path = write(tmp_path / "vitals.csv", VITALS_CSV)
    result = read_file(path, VITALS)

    check_shapes(result, VITALS)
    assert result.source == str(path)
    assert result.good.to_pylist() == [
        {"patient_id": "p1", "ts": utc(2026, 1, 1, 10), "heart_rate": 72, "spo2": 98},
        {"patient_id": "p7", "ts": utc(2026, 1, 1, 10, 30), "heart_rate": 80, "spo2": None},
    ]
    assert quarantine(result) == [
        (3, "column 'heart_rate': 'abc' is not an int"),
        (4, "missing key column 'patient_id'"),
        (5, "missing time column 'ts'"),
        (6, "line has 3 fields, header has 4"),
        (8, "column 'ts': '2026-13-01' is not a timestamp"),
        (9, "column 'heart_rate': '1.5' is not an int"),
    ]
    assert result.quarantined["raw"][0].as_py() == "p2,2026-01-01T10:00:01Z,abc,97"
    data_lines = [line for line in VITALS_CSV.splitlines()[1:] if line.strip()]
    assert result.total == len(data_lines) == 8


def test_csv_reports_every_problem_of_a_row(tmp_path: Path) -> None:
    text = "patient_id,ts,heart_rate,spo2\n,yesterday,x,9223372036854775808\n"
    path = write(tmp_path / "v.csv", text)
    assert quarantine(read_file(path, VITALS)) == [(2, "; ".join([
        "missing key column 'patient_id'",
        "column 'ts': 'yesterday' is not a timestamp",
        "column 'heart_rate': 'x' is not an int",
        "column 'spo2': '9223372036854775808' does not fit a 64-bit int",
    ]))]


def test_csv_double_bool_and_string_columns(tmp_path: Path) -> None:
    text = ("user,ts,score,active,note\n"
            "u1,2026-01-01T00:00:00,1.5,TRUE,hello world\n"
            "u2,2026-01-01T00:00:00-05:00,-3,0,\n"
            "u3,2026-01-01T00:00:00Z,,False,\" spaced \"\n"
            "u4,2026-01-01T00:00:00Z,abc,true,x\n"
            "u5,2026-01-01T00:00:00Z,2,yes,x\n")
    result = read_file(write(tmp_path / "events.csv", text), EVENTS)

    check_shapes(result, EVENTS)
    assert result.good.to_pylist() == [
        {"user": "u1", "ts": utc(2026, 1, 1), "score": 1.5, "active": True,
         "note": "hello world"},
        {"user": "u2", "ts": utc(2026, 1, 1, 5), "score": -3.0, "active": False, "note": None},
        {"user": "u3", "ts": utc(2026, 1, 1), "score": None, "active": False,
         "note": " spaced "},
    ]
    assert quarantine(result) == [
        (5, "column 'score': 'abc' is not a double"),
        (6, "column 'active': 'yes' is not a bool (expected true, false, 1 or 0)"),
    ]
    assert result.total == 5


def test_csv_quoted_field_spanning_lines_is_quarantined_line_by_line(tmp_path: Path) -> None:
    text = ("user,ts,score,active,note\n"
            "u1,2026-01-01T00:00:00Z,1,true,\"two\nlines\"\n"
            "u2,2026-01-01T00:00:00Z,oops,true,x\n"
            "u3,2026-01-01T00:00:00Z,3,true,x\n")
    result = read_file(write(tmp_path / "e.csv", text), EVENTS)
    assert result.good["user"].to_pylist() == ["u3"]
    assert quarantine(result) == [
        (2, "malformed CSV: a quoted field is not closed on its line (records are one per line)"),
        (3, "line has 1 fields, header has 5"),
        (4, "column 'score': 'oops' is not a double"),
    ]
    assert result.total == 4


def test_csv_takes_a_field_of_200000_characters_whole(tmp_path: Path) -> None:
    huge = "x" * 200_000
    text = ("user,ts,score,active,note\n"
            f"u1,2026-01-01T00:00:00Z,1,true,{huge}\n"
            "u2,2026-01-01T00:00:00Z,2,false,ok\n")
    result = read_file(write(tmp_path / "e.csv", text), EVENTS)
    assert result.quarantined.num_rows == 0
    assert result.good["user"].to_pylist() == ["u1", "u2"]
    assert result.good["note"].to_pylist() == [huge, "ok"]


def test_csv_header_columns_follow_the_row_rules(tmp_path: Path) -> None:
    path = write(tmp_path / "v.csv", "patient_id,ts,heart_rate,pulse\np1,2026-01-01,1,2\n"
                                     "p2,2026-01-01,3,\n")
    result = read_file(path, VITALS)
    assert result.good.num_rows == 0
    assert quarantine(result) == [(2, "unknown column 'pulse'"), (3, "unknown column 'pulse'")]
    path = write(tmp_path / "w.csv", "patient_id,ts,heart_rate,heart_rate\np1,2026-01-01,1,2\n")
    assert quarantine(read_file(path, VITALS)) == [(2, "repeated column 'heart_rate'")]
    path = write(tmp_path / "x.csv", "heart_rate,spo2\n70,98\n")
    assert quarantine(read_file(path, VITALS)) == [
        (2, "missing key column 'patient_id'; missing time column 'ts'")]


def test_csv_header_that_cannot_be_read_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "v.csv", '\n"patient_id,ts\np1,2026-01-01\n')
    with pytest.raises(IngestError) as err:
        read_file(path, VITALS)
    assert str(err.value) == (f"{path}: line 2 (the header): malformed CSV: a quoted field is "
                              "not closed on its line (records are one per line)")


def test_csv_without_header_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "empty.csv", "\n\n")
    with pytest.raises(IngestError, match="empty file: no header line"):
        read_file(path, VITALS)


def test_csv_only_header_gives_empty_tables(tmp_path: Path) -> None:
    result = read_file(write(tmp_path / "v.csv", "patient_id,ts,heart_rate,spo2\n"), VITALS)
    check_shapes(result, VITALS)
    assert result.total == 0


def test_csv_100k_rows_reconcile(tmp_path: Path) -> None:
    lines = ["patient_id,ts,heart_rate,spo2"]
    lines += [f"p{i},2026-01-01T00:00:{i % 60:02d}Z,{60 + i % 50},{'bad' if i % 1000 == 0 else 97}"
              for i in range(100_000)]
    result = read_file(write(tmp_path / "big.csv", "\n".join(lines) + "\n"), VITALS)
    assert result.good.num_rows == 99_900
    assert result.quarantined.num_rows == 100
    assert result.quarantined["line"][1].as_py() == 1002


# ---------------------------------------------------------------- JSONL

VITALS_JSONL = """\
{"patient_id": "p1", "ts": "2026-01-01T10:00:00Z", "heart_rate": 72, "spo2": 98}
{"patient_id": "p2", "ts":
[1, 2]
{"patient_id": "p3", "ts": "2026-01-01T10:00:00Z", "heart_rate": 70, "spo2": 97, "foo": 1}
{"patient_id": "p4", "ts": "2026-01-01T10:00:00Z", "heart_rate": true, "spo2": 97}

{"patient_id": 5, "ts": "2026-01-01T10:00:00Z", "heart_rate": 70}
{"patient_id": "p6", "ts": "2026-01-01T10:00:00-05:00", "heart_rate": 70.0, "spo2": null}
{"patient_id": "p7", "heart_rate": 70}
{"patient_id": "p8", "ts": "2026-01-01T10:00:00Z", "heart_rate": 70.5}
{"patient_id": "p9", "ts": 1767261600}
{"patient_id": "p10", "ts": "2026-01-01T10:00:00Z", "spo2": NaN}
{"patient_id": "p11", "ts": "2026-01-01T10:00:00Z", "ts": "2026-01-02T10:00:00Z"}
{"patient_id": "", "ts": "2026-01-01T10:00:00"}
{"patient_id": "p13", "ts": "2026-01-01T10:00:00", "spo2": 9223372036854775808}
"""


def test_jsonl_keeps_good_objects_and_quarantines_the_rest(tmp_path: Path) -> None:
    path = write(tmp_path / "vitals.jsonl", VITALS_JSONL)
    result = read_file(path, VITALS)

    check_shapes(result, VITALS)
    assert result.good.to_pylist() == [
        {"patient_id": "p1", "ts": utc(2026, 1, 1, 10), "heart_rate": 72, "spo2": 98},
        {"patient_id": "p6", "ts": utc(2026, 1, 1, 15), "heart_rate": 70, "spo2": None},
    ]
    reasons = quarantine(result)
    assert reasons[0][0] == 2 and reasons[0][1].startswith("not valid JSON: ")
    assert reasons[1:] == [
        (3, "expected a JSON object, got an array"),
        (4, "unknown column 'foo'"),
        (5, "column 'heart_rate': true is not an int"),
        (7, "column 'patient_id': expected a string, got 5"),
        (9, "missing time column 'ts'"),
        (10, "column 'heart_rate': 70.5 is not an int"),
        (11, "column 'ts': 1767261600 is not a timestamp (expected an ISO 8601 string)"),
        (12, "not valid JSON: NaN is not allowed"),
        (13, "not valid JSON: duplicate key 'ts'"),
        (14, "missing key column 'patient_id'"),
        (15, "column 'spo2': 9223372036854775808 does not fit a 64-bit int"),
    ]
    assert result.quarantined["raw"][1].as_py() == "[1, 2]"
    data_lines = [line for line in VITALS_JSONL.splitlines() if line.strip()]
    assert result.total == len(data_lines) == 14


def test_ndjson_double_bool_and_string_types(tmp_path: Path) -> None:
    rows = [
        {"user": "u1", "ts": "2026-06-01T12:00:00+09:30", "score": 3, "active": True},
        {"user": "u2", "ts": "2026-06-01T12:00:00Z", "score": 2.5, "active": False, "note": "n"},
        {"user": "u3", "ts": "2026-06-01T12:00:00Z", "score": "2.5"},
        {"user": "u4", "ts": "2026-06-01T12:00:00Z", "active": "true"},
        {"user": "u5", "ts": "2026-06-01T12:00:00Z", "active": 1},
        {"user": "u6", "ts": "2026-06-01T12:00:00Z", "score": False},
        {"user": "u7", "ts": "2026-06-01T12:00:00Z", "note": 12},
    ]
    path = write(tmp_path / "events.ndjson", "\n".join(json.dumps(r) for r in rows) + "\n")
    result = read_file(path, EVENTS)

    check_shapes(result, EVENTS)
    assert result.good.to_pylist() == [
        {"user": "u1", "ts": utc(2026, 6, 1, 2, 30), "score": 3.0, "active": True, "note": None},
        {"user": "u2", "ts": utc(2026, 6, 1, 12), "score": 2.5, "active": False, "note": "n"},
    ]
    assert quarantine(result) == [
        (3, 'column \'score\': "2.5" is not a double'),
        (4, 'column \'active\': "true" is not a bool (expected true or false)'),
        (5, "column 'active': 1 is not a bool (expected true or false)"),
        (6, "column 'score': false is not a double"),
        (7, "column 'note': expected a string, got 12"),
    ]


# ---------------------------------------------------------------- Parquet

def test_parquet_casts_safe_types_and_quarantines_bad_rows(tmp_path: Path) -> None:
    table = pa.table({
        "patient_id": pa.array(["p1", None, "p3", "p4"]),
        "ts": pa.array([datetime(2026, 1, 1, 10, 0, 0, 123000)] * 4, pa.timestamp("ms")),
        "heart_rate": pa.array([72, 73, 74, 75], pa.int32()),
        "spo2": pa.array(["98", "97", "abc", None]),
    })
    path = tmp_path / "vitals.parquet"
    pq.write_table(table, path)
    result = read_file(path, VITALS)

    check_shapes(result, VITALS)
    ts = utc(2026, 1, 1, 10, 0, 0, 123000)
    assert result.good.to_pylist() == [
        {"patient_id": "p1", "ts": ts, "heart_rate": 72, "spo2": 98},
        {"patient_id": "p4", "ts": ts, "heart_rate": 75, "spo2": None},
    ]
    assert quarantine(result) == [
        (2, "missing key column 'patient_id'"),
        (3, "column 'spo2': 'abc' is not an int"),
    ]
    assert json.loads(result.quarantined["raw"][1].as_py()) == {
        "patient_id": "p3", "ts": "2026-01-01 10:00:00.123000", "heart_rate": 74,
        "spo2": "abc"}
    assert result.total == 4


def test_parquet_per_row_cast_failures_and_timezones(tmp_path: Path) -> None:
    midnight_ns = 1_767_225_600 * 10**9  # 2026-01-01T00:00:00Z
    table = pa.table({
        "user": ["u1", "u2", "u3"],
        # u2 has a nanosecond part: it cannot be stored in microseconds without loss.
        "ts": pa.array([midnight_ns + 1_000, midnight_ns + 1, midnight_ns],
                       pa.timestamp("ns", tz="+05:30")),
        "score": pa.array([1, 2, 3], pa.int8()),
        "active": [True, None, False],
        "note": pa.array(["a", "b", "c"]).dictionary_encode(),
    })
    path = tmp_path / "events.parquet"
    pq.write_table(table, path)
    result = read_file(path, EVENTS)

    check_shapes(result, EVENTS)
    assert result.good.to_pylist() == [
        {"user": "u1", "ts": utc(2026, 1, 1, 0, 0, 0, 1), "score": 1.0, "active": True,
         "note": "a"},
        {"user": "u3", "ts": utc(2026, 1, 1), "score": 3.0, "active": False, "note": "c"},
    ]
    [(line, reason)] = quarantine(result)
    assert line == 2
    assert reason.startswith("column 'ts': ") and "cannot be converted to timestamp" in reason


def test_parquet_float_with_fraction_for_int_column_is_quarantined(tmp_path: Path) -> None:
    table = pa.table({"patient_id": ["p1", "p2"], "ts": pa.array([0, 0], pa.timestamp("s")),
                      "heart_rate": [70.0, 70.5]})
    path = tmp_path / "v.parquet"
    pq.write_table(table, path)
    result = read_file(path, VITALS)
    assert result.good.to_pylist() == [
        {"patient_id": "p1", "ts": utc(1970, 1, 1), "heart_rate": 70, "spo2": None}]
    [(line, reason)] = quarantine(result)
    assert line == 2
    assert reason.startswith("column 'heart_rate': 70.5 cannot be converted to int")


def test_parquet_string_timestamps_are_parsed_as_iso(tmp_path: Path) -> None:
    table = pa.table({"patient_id": ["p1", "p2", "p3"],
                      "ts": ["2026-01-01T10:00:00+01:00", "2026-01-01T10:00:00", "soon"]})
    path = tmp_path / "v.parquet"
    pq.write_table(table, path)
    result = read_file(path, VITALS)
    assert result.good["ts"].to_pylist() == [utc(2026, 1, 1, 9), utc(2026, 1, 1, 10)]
    assert quarantine(result) == [(3, "column 'ts': 'soon' is not a timestamp")]


@pytest.mark.parametrize(("columns", "expected"), [
    ({"patient_id": ["p"], "ts": pa.array([0], pa.timestamp("s")), "pulse": [1]},
     "unknown column 'pulse'"),
    ({"patient_id": ["p"], "heart_rate": [1]}, "missing time column 'ts'"),
    ({"patient_id": ["p"], "ts": pa.array([0], pa.timestamp("s")), "heart_rate": [True]},
     "column 'heart_rate': true is not an int (the column has type bool)"),
])
def test_parquet_columns_that_do_not_fit_quarantine_their_rows(tmp_path: Path, columns: dict,
                                                               expected: str) -> None:
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table(columns), path)
    result = read_file(path, VITALS)
    assert result.good.num_rows == 0
    assert quarantine(result) == [(1, expected)]


# ---------------------------------------------------------------- whole-file errors

def test_unknown_extension_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "vitals.txt", "patient_id,ts\n")
    with pytest.raises(IngestError) as err:
        read_file(path, VITALS)
    assert str(err.value).startswith(f"{path}: unknown extension '.txt'")


def test_unreadable_files_raise_ingest_error(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="cannot read file: No such file"):
        read_file(tmp_path / "absent.csv", VITALS)
    bad_parquet = write(tmp_path / "fake.parquet", "not parquet")
    with pytest.raises(IngestError, match="not a readable Parquet file"):
        read_file(bad_parquet, VITALS)
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    with pytest.raises(IngestError, match="cannot read file: Is a directory"):
        read_file(folder, VITALS)


# ---------------------------------------------------------------- one record per physical line

def test_csv_unclosed_quote_is_an_error_of_its_line_only(tmp_path: Path) -> None:
    lines = ["patient_id,ts,heart_rate,spo2"]
    lines += [f"p{i},2026-01-01T00:00:00Z,{60 + i % 50},97" for i in range(5001)]
    lines[3] = 'p2,"2026-01-01T00:00:00Z,70,97'  # opens a quote that never closes
    result = read_file(write(tmp_path / "big.csv", "\n".join(lines) + "\n"), VITALS)
    assert quarantine(result) == [
        (4, "malformed CSV: a quoted field is not closed on its line (records are one per line)")]
    assert result.quarantined["raw"][0].as_py() == lines[3]
    assert result.good.num_rows == 5000
    assert result.total == 5001


def test_csv_quote_closing_on_a_later_line_does_not_join_the_lines(tmp_path: Path) -> None:
    text = ("user,ts,score,active,note\n"
            "u1,2026-01-01T00:00:00Z,1,true,\"two\n"
            "u2,2026-01-01T00:00:00Z,2,true,x\n"
            "lines\"\n")
    result = read_file(write(tmp_path / "e.csv", text), EVENTS)
    assert result.good["user"].to_pylist() == ["u2"]
    assert [line for line, _ in quarantine(result)] == [2, 4]
    assert quarantine(result)[1] == (4, "line has 1 fields, header has 5")


def test_csv_lines_may_end_with_cr_lf_or_a_lone_cr(tmp_path: Path) -> None:
    path = tmp_path / "v.csv"
    path.write_bytes(b"patient_id,ts,heart_rate,spo2\r\np1,2026-01-01T00:00:00Z,70,98\r"
                     b"p2,2026-01-01T00:00:00Z,x,97\np3,2026-01-01T00:00:00Z,71,96")
    result = read_file(path, VITALS)
    assert result.good["patient_id"].to_pylist() == ["p1", "p3"]
    assert [line for line, _ in quarantine(result)] == [3]


def test_jsonl_nested_too_deeply_is_quarantined(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    path = write(tmp_path / "v.jsonl", f"{deep}\n"
                 '{"patient_id": "p1", "ts": "2026-01-01T00:00:00Z"}\n')
    result = read_file(path, VITALS)
    assert result.good["patient_id"].to_pylist() == ["p1"]
    assert quarantine(result) == [(1, "not valid JSON: nested too deeply")]


@pytest.mark.parametrize("name", ["v.csv", "v.jsonl"])
def test_binary_file_is_an_error_naming_it(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + bytes(range(256)))
    with pytest.raises(IngestError) as err:
        read_file(path, VITALS)
    assert str(err.value) == f"{path}: binary file (a NUL byte at offset 3); expected UTF-8 text"

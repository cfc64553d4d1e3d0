"""Every physical line of a CSV or JSONL file is one row: good or quarantined, never folded."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.specs import RecordingSpec
from jobs.recordings.ingest import read_file

SPEC = RecordingSpec(name="v", columns={"k": "string", "ts": "timestamp", "n": "int"},
                     key="k", time="ts")
FIELDS = st.sampled_from(["70", "x", '"', '"70"', '"7""0"', "", '"a,b"', "\ufeff"])


@st.composite
def lines(draw) -> list[str]:
    count = draw(st.integers(1, 12))
    out = []
    for i in range(count):
        line = f"k{i},2026-01-01T00:00:00Z,{draw(FIELDS)}"
        if draw(st.booleans()):  # a stray quote somewhere
            at = draw(st.integers(0, len(line)))
            line = line[:at] + '"' + line[at:]
        out.append(line)
    return out


@settings(max_examples=150, deadline=None, derandomize=True)
@given(lines(), st.sampled_from(["\n", "\r\n", "\r"]))
def test_each_csv_line_is_exactly_one_row(data: list[str], end: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "f.csv"
        path.write_bytes(end.join(["k,ts,n", *data]).encode() + end.encode())
        result = read_file(path, SPEC)
    lines_ = result.quarantined["line"].to_pylist()
    assert result.total == len(data)
    assert len(set(lines_)) == len(lines_) and all(2 <= n <= len(data) + 1 for n in lines_)
    good = result.good["k"].to_pylist()
    assert len(set(good)) == len(good)
    for n, raw in zip(lines_, result.quarantined["raw"].to_pylist(), strict=True):
        assert raw == data[n - 2]


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(st.text(alphabet='{}[]":,0123456789ak \\', max_size=30), min_size=1,
                max_size=10))
def test_each_jsonl_line_is_exactly_one_row(data: list[str]) -> None:
    data = [d if d.strip() else "{}" for d in data]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "f.jsonl"
        path.write_text("\n".join(data) + "\n")
        result = read_file(path, SPEC)
    assert result.total == len(data)
    assert result.quarantined["line"].to_pylist() == sorted(set(
        result.quarantined["line"].to_pylist()))


NOTED = RecordingSpec(name="n", columns={"k": "string", "ts": "timestamp", "note": "string"},
                      key="k", time="ts")


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(131_000, 140_000), st.sampled_from(["y", ",", '"', "é"]),
                          st.booleans()), min_size=1, max_size=4))
def test_a_long_csv_field_is_one_value_taken_whole(fields: list[tuple[int, str, bool]]) -> None:
    values = ["y" * size + mark for size, mark, _ in fields]
    cells = ['"' + v.replace('"', '""') + '"' if quoted or "," in v or '"' in v else v
             for v, (_, _, quoted) in zip(values, fields, strict=True)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "f.csv"
        path.write_text("k,ts,note\n" + "".join(f"k{i},2026-01-01T00:00:00Z,{c}\n"
                                                for i, c in enumerate(cells)), encoding="utf-8")
        result = read_file(path, NOTED)
    assert result.quarantined.num_rows == 0
    assert result.good["note"].to_pylist() == values

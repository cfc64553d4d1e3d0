"""``reprise record`` on real Delta tables (delta-rs, no Spark): commits, repeats, errors."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from engine.catalog import load_catalog
from jobs.cli.app import app
from jobs.execution.arrival import input_index
from jobs.execution.input_files import read_range
from jobs.recordings.commits import FILES_KEY, RECORD_KEY, quarantine_rows
from jobs.recordings.store import record_files
from jobs.storage import DeltaStorage, open_driver_storage
from jobs.warehouse import Warehouse

ROOT = Path(__file__).resolve().parents[2]
CSV = """\
patient_id,ts,heart_rate,spo2
p1,2026-01-01T00:00:00Z,70,98
p2,2026-01-01T00:00:05Z,abc,98
p3,2026-01-01T00:00:10Z,71,97
"""
JSONL = """\
{"patient_id": "q1", "ts": "2026-01-01T00:01:00Z", "heart_rate": 72.0}
{"patient_id": "q2", "heart_rate": 73}
"""


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    (tmp_path / "a.csv").write_text(CSV)
    (tmp_path / "b.jsonl").write_text(JSONL)
    return [tmp_path / "a.csv", tmp_path / "b.jsonl"]


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    return Warehouse(tmp_path / "wh")


@pytest.fixture
def storage(backend_storage) -> DeltaStorage:
    """Each backend in turn (the delta-rs leg without Spark, as ``reprise record`` runs it)."""
    if backend_storage.name == "delta-rs":
        return open_driver_storage("delta-rs")
    return backend_storage


def reprise(wh: Warehouse, *args: str):
    return CliRunner().invoke(app, [*args, "--warehouse", str(wh.root), "--catalog",
                                    str(ROOT / "schemas"), "--backend",
                                    os.environ["REPRISE_DELTA_BACKEND"]])  # (the fixture's)


def tables(storage, wh: Warehouse) -> tuple[list[str], list[tuple[str, int]]]:
    ids = sorted(storage.read_arrow(wh.recording("vitals")).column("patient_id").to_pylist())
    bad = quarantine_rows(storage, wh.recording("vitals"), wh.quarantine("vitals"))
    return ids, sorted(zip(bad.column("source").to_pylist(), bad.column("line").to_pylist(),
                           strict=True))


def test_record_is_one_commit_on_each_table_under_one_record_id(wh, storage, files) -> None:
    result = reprise(wh, "record", "vitals", *map(str, files))
    assert result.exit_code == 0, result.output
    assert f"{files[0]}: 3 rows, 2 fit, 1 quarantined" in result.output
    assert f"{files[1]}: 2 rows, 1 fit, 1 quarantined" in result.output
    assert tables(storage, wh) == (["p1", "p3", "q1"], [(str(files[0]), 3), (str(files[1]), 2)])
    [point] = map(storage.commit_metadata, storage.history(wh.recording("vitals")))
    [quarantined] = map(storage.commit_metadata, storage.history(wh.quarantine("vitals")))
    assert point[RECORD_KEY] == quarantined[RECORD_KEY]
    assert json.loads(point[FILES_KEY]) == [
        {"source": str(f), "sha256": hashlib.sha256(f.read_bytes()).hexdigest(), "rows": rows,
         "recorded": rows - 1, "quarantined": 1} for f, rows in zip(files, (3, 2), strict=True)]


def test_recording_the_same_content_again_is_skipped_naming_the_version(wh, storage, files,
                                                                       tmp_path) -> None:
    assert reprise(wh, "record", "vitals", str(files[0])).exit_code == 0
    copy = tmp_path / "copy.csv"
    copy.write_bytes(files[0].read_bytes())
    result = reprise(wh, "record", "vitals", str(copy), str(files[1]))
    assert result.exit_code == 0, result.output
    assert (f"skipped {copy}: already recorded in version 0 of recording 'vitals'"
            in result.output)
    assert "--again records it again" in result.output
    assert tables(storage, wh)[0] == ["p1", "p3", "q1"]
    result = reprise(wh, "record", "vitals", str(copy), "--again")
    assert result.exit_code == 0, result.output
    assert tables(storage, wh)[0] == ["p1", "p1", "p3", "p3", "q1"]


def test_the_same_content_twice_in_one_command_is_recorded_once(wh, storage, files,
                                                                tmp_path) -> None:
    copy = tmp_path / "copy.csv"
    copy.write_bytes(files[0].read_bytes())
    result = reprise(wh, "record", "vitals", str(files[0]), str(copy))
    assert result.exit_code == 0, result.output
    assert f"skipped {copy}: same content as {files[0]}, given before it" in result.output
    assert tables(storage, wh) == (["p1", "p3"], [(str(files[0]), 3)])


def arrival(storage, wh: Warehouse, version: int) -> list[str]:
    """The recording's ``patient_id`` in arrival order at ``version``, as a replay numbers its
    events (:func:`jobs.execution.arrival.input_index`: files with the offset of their first row;
    rows by their arrival position in the file), read from the Parquet part files themselves."""
    ids: list[str] = []
    for f in input_index(storage, wh.recording("vitals"), version):
        assert f.offset == len(ids)
        (part,) = read_range([asdict(f)], ["patient_id"], [], f.offset, f.offset + f.rows)
        assert part.seq.tolist() == list(range(f.offset, f.offset + f.rows))
        ids += part.table.column("patient_id").to_pylist()
    return ids


def _mixed(folder: Path) -> list[Path]:
    """Files of three formats, given neither in name order nor grouped by format, each with a
    row that does not fit between good ones (and a repeat of an earlier file)."""
    folder.mkdir()
    ts = "2026-01-01T00:00:00Z"
    (folder / "z.csv").write_text(f"patient_id,ts,heart_rate\nz1,{ts},70\nzx,{ts},abc\n"
                                  f"z2,{ts},71\nz3,{ts},72\n")
    (folder / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [
        {"patient_id": "m1", "ts": ts}, {"patient_id": "m2", "ts": ts},
        {"patient_id": "mx"}, {"patient_id": "m3", "ts": ts}]))
    pq.write_table(pa.table({"patient_id": ["b1", "bx", "b2"], "ts": [ts] * 3,
                             "heart_rate": ["60", "x", "61"]}), folder / "b.parquet")
    (folder / "again.csv").write_bytes((folder / "z.csv").read_bytes())
    (folder / "y.jsonl").write_text(json.dumps({"patient_id": "y1", "ts": ts}) + "\n")
    (folder / "a.csv").write_text(f"patient_id,ts\na1,{ts}\na2,{ts}\n")
    return [folder / n for n in
            ("z.csv", "m.jsonl", "b.parquet", "again.csv", "y.jsonl", "a.csv")]


def test_rows_arrive_in_the_order_of_the_files_then_of_their_rows(wh, storage,
                                                                   tmp_path) -> None:
    files = _mixed(tmp_path / "in")
    result = reprise(wh, "record", "vitals", *map(str, files))
    assert result.exit_code == 0, result.output
    first = ["z1", "z2", "z3", "m1", "m2", "m3", "b1", "b2", "y1", "a1", "a2"]
    assert arrival(storage, wh, 0) == first
    bad = quarantine_rows(storage, wh.recording("vitals"), wh.quarantine("vitals"))
    assert list(zip(bad.column("source").to_pylist(), bad.column("line").to_pylist(),
                    strict=True)) == [(str(files[0]), 3), (str(files[1]), 3),
                                      (str(files[2]), 2)]
    newest = storage.commit_metadata(storage.history(wh.recording("vitals"))[0])
    assert [f["source"] for f in json.loads(newest[FILES_KEY])] == [
        str(f) for f in files if f.name != "again.csv"]

    z, m, b, _, y, a = files
    assert reprise(wh, "record", "vitals", str(a), str(b), str(z), "--again").exit_code == 0
    assert arrival(storage, wh, 1) == [*first, "a1", "a2", "b1", "b2", "z1", "z2", "z3"]
    n = tmp_path / "in" / "n.csv"
    n.write_text("patient_id,ts\nn1,2026-01-01T00:00:00Z\n")
    result = reprise(wh, "record", "vitals", str(y), str(n), str(m))
    assert result.exit_code == 0, result.output
    assert arrival(storage, wh, 2)[len(first) + 7:] == ["n1"]  # y.jsonl, m.jsonl: skipped


def dies_after_quarantine(storage: DeltaStorage) -> DeltaStorage:
    """A storage of ``storage``'s backend that raises on the recording commit, as a process
    killed between the two commits would stop."""

    class DiesAfterQuarantine(type(storage)):
        def commit_files(self, path, files, schema, **kwargs):
            if "/recordings/" in path:
                raise SystemExit("killed")
            return super().commit_files(path, files, schema, **kwargs)

    return DiesAfterQuarantine(storage.spark)


def test_an_orphaned_quarantine_commit_is_hidden_then_rolled_back(wh, storage, files) -> None:
    spec = load_catalog(ROOT / "schemas").recording("vitals")
    with pytest.raises(SystemExit):
        record_files(dies_after_quarantine(storage), wh, spec, files)
    assert storage.read_arrow(wh.quarantine("vitals")).num_rows == 2  # stored, not yet visible
    assert not storage.exists(wh.recording("vitals"))
    assert quarantine_rows(storage, wh.recording("vitals"), wh.quarantine("vitals")).num_rows == 0

    record_files(storage, wh, spec, files)
    expected = (["p1", "p3", "q1"], [(str(files[0]), 3), (str(files[1]), 2)])
    assert tables(storage, wh) == expected
    assert storage.read_arrow(wh.quarantine("vitals")).num_rows == 2  # the orphan is gone
    record_files(storage, wh, spec, files)  # everything is skipped now
    assert tables(storage, wh) == expected


def test_a_file_with_only_quarantined_rows_is_still_remembered(wh, storage, tmp_path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("patient_id,ts\n,2026-01-01T00:00:00Z\n")
    result = reprise(wh, "record", "vitals", str(bad))
    assert result.exit_code == 0, result.output
    assert f"warning: no row of {bad} fits recording 'vitals'" in result.output
    result = reprise(wh, "record", "vitals", str(bad))
    assert "already recorded in version 0" in result.output
    assert tables(storage, wh) == ([], [(str(bad), 2)])


@pytest.mark.parametrize(("make", "problem"), [
    (lambda d: d, "cannot read file: Is a directory"),
    (lambda d: d / "absent.csv", "cannot read file: No such file or directory"),
    (lambda d: _bytes(d / "x.csv", b"PK\x03\x04\x14\x00\x00\x00"), "binary file"),
    (lambda d: _bytes(d / "x.jsonl", b"\n\n"), "empty file"),
    (lambda d: _bytes(d / "x.xml", b"<x/>"), "unknown extension '.xml'"),
])
def test_a_file_that_cannot_be_recorded_is_one_line_naming_it(wh, storage, files, tmp_path,
                                                              make, problem) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    path = make(folder)
    result = reprise(wh, "record", "vitals", str(files[0]), str(path))
    assert result.exit_code == 1
    last = result.output.strip().splitlines()[-1]
    assert last.startswith(f"error: {path}: {problem}"), result.output
    assert "Traceback" not in result.output
    assert not storage.exists(wh.recording("vitals"))  # nothing written, not even a.csv


def _bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("args", "message"), [
    (["record", "nope", "x.csv"], "error: unknown recording 'nope'"),
    (["record", "vitals", "x.csv", "--backend", "foo"],
     "error: --backend: unknown Delta backend 'foo'"),
])
def test_command_problems_are_one_line(wh, args, message) -> None:
    result = CliRunner().invoke(app, [*args, "--warehouse", str(wh.root), "--catalog",
                                      str(ROOT / "schemas")])
    assert result.exit_code == 1
    assert result.output.strip().startswith(message) and "\n" not in result.output.strip()

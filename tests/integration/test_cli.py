"""The ``reprise`` command line, in-process (sharing the test SparkSession)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from jobs.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
BAD_CSV = """\
patient_id,ts,heart_rate,spo2
p1,2026-01-01T00:00:00Z,70,98
p1,2026-01-01T00:00:05Z,abc,98
,2026-01-01T00:00:10Z,71,97
p2,,72,96
p2,2026-01-01T00:00:15Z,73
p2,2026-01-01T00:00:20+01:00,74,95
p3,not-a-time,75,94
"""


@pytest.fixture
def cli(spark, tmp_path):
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, [*args, "--warehouse", str(tmp_path / "wh"),
                                   "--catalog", str(ROOT / "schemas")])

    return invoke


def test_record_keeps_good_rows_and_quarantines_bad_ones_with_reasons(cli, storage, tmp_path):
    source = tmp_path / "vitals.csv"
    source.write_text(BAD_CSV)
    result = cli("record", "vitals", str(source))
    assert result.exit_code == 0, result.output
    assert "5 rows quarantined" in result.output
    recorded = storage.read_arrow(str(tmp_path / "wh" / "recordings" / "vitals"))
    assert sorted(recorded.column("heart_rate").to_pylist()) == [70, 74]
    assert recorded.column("ts").to_pylist()[1].hour == 23  # +01:00 converted to UTC
    quarantine = storage.read_arrow(str(tmp_path / "wh" / "quarantine" / "vitals")).to_pylist()
    reasons = {row["line"]: row["reason"] for row in quarantine}
    assert sorted(reasons) == [3, 4, 5, 6, 8]
    assert "heart_rate" in reasons[3] and "'abc'" in reasons[3]
    assert reasons[4] == "missing key column 'patient_id'"
    assert reasons[5] == "missing time column 'ts'"
    assert "3 fields" in reasons[6] or "fields" in reasons[6]
    assert "not a timestamp" in reasons[8]
    assert recorded.num_rows + len(quarantine) == BAD_CSV.count("\n") - 1


def test_record_unknown_recording_and_unreadable_file_fail_clearly(cli, tmp_path):
    result = cli("record", "nope", str(tmp_path / "x.csv"))
    assert result.exit_code == 1 and "unknown recording 'nope'" in result.output
    odd = tmp_path / "data.xml"
    odd.write_text("<x/>")
    result = cli("record", "vitals", str(odd))
    assert result.exit_code == 1 and "data.xml" in result.output


def test_query_file_error_names_file_and_field(spark, tmp_path):
    schemas = tmp_path / "schemas"
    (schemas / "queries").mkdir(parents=True)
    (schemas / "recordings").mkdir()
    (schemas / "recordings" / "vitals.yaml").write_text(
        (ROOT / "schemas" / "recordings" / "vitals.yaml").read_text())
    (schemas / "queries" / "broken.yaml").write_text(
        "name: broken\nkind: window\ninput: vitals\nlateness: soon\nquery: {}\n")
    result = CliRunner().invoke(app, ["replay", "broken", "--catalog", str(schemas),
                                      "--warehouse", str(tmp_path / "wh")])
    assert result.exit_code == 1
    assert "broken.yaml" in result.output and "'lateness'" in result.output


def test_a_broken_query_file_does_not_block_record_and_is_named_when_needed(spark, tmp_path):
    schemas = tmp_path / "schemas"
    shutil.copytree(ROOT / "schemas", schemas)
    (schemas / "queries" / "ads_10s.yaml").write_bytes(b"name: ads_10s\nkind: \xff[\n")
    source = tmp_path / "vitals.csv"
    source.write_text(BAD_CSV)
    options = ["--catalog", str(schemas), "--warehouse", str(tmp_path / "wh")]
    result = CliRunner().invoke(app, ["record", "vitals", str(source), *options])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(app, ["replay", "ads_10s", *options])
    assert result.exit_code == 1
    assert "ads_10s.yaml: field '<document>': not UTF-8 text: byte 0xff on line 2" in \
        result.output


def test_generate_replay_validate_end_to_end(cli, storage, tmp_path):
    result = cli("generate", "vitals", "--keys", "10", "--events", "5000", "--commits", "4")
    assert result.exit_code == 0, result.output
    path = str(tmp_path / "wh" / "recordings" / "vitals")
    assert storage.version(path) == 3
    again = cli("generate", "vitals", "--keys", "10", "--events", "5000")
    assert again.exit_code == 1 and "--replace" in again.output
    result = cli("replay", "vitals_hr_1m", "--plan", "rows:1000", "--run-id", "r1")
    assert result.exit_code == 0, result.output
    assert "5000 events in 5 batches" in result.output
    result = cli("validate", "r1")
    assert result.exit_code == 0, result.output
    assert "output equals the reference" in result.output
    missing = cli("validate", "nope")
    assert missing.exit_code == 1 and "known runs: r1" in missing.output

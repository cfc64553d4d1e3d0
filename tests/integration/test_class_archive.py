"""The class-data-sharing archive of the driver JVM: used only when made for this installation,
and a damaged one never stops Spark from starting."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from jobs.runtime import class_archive

ROOT = class_archive.Path(__file__).resolve().parents[2]


def point_at(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(class_archive, "ARCHIVE", tmp_path / "classes.jsa")
    monkeypatch.setattr(class_archive, "NOTE", tmp_path / "classes.json")


def test_an_archive_is_used_only_with_a_note_of_this_installation_and_its_size(monkeypatch,
                                                                              tmp_path):
    point_at(monkeypatch, tmp_path)
    assert class_archive.java_option() == ""  # none made
    class_archive.ARCHIVE.write_bytes(b"x" * 10)
    assert class_archive.java_option() == ""  # no note
    note = {"made_for": class_archive.fingerprint(), "size": 10}
    class_archive.NOTE.write_text(json.dumps(note))
    assert f"-XX:SharedArchiveFile={class_archive.ARCHIVE}" in class_archive.java_option()
    class_archive.ARCHIVE.write_bytes(b"x" * 9)  # cut short
    assert class_archive.java_option() == ""
    class_archive.NOTE.write_text(json.dumps({**note, "size": 9,
                                              "made_for": {**note["made_for"], "jars": "other"}}))
    assert class_archive.java_option() == ""  # another Spark's
    class_archive.NOTE.write_text("{not json")
    assert class_archive.java_option() == ""


_START = """
import json, sys
from pathlib import Path
from jobs.runtime import class_archive
from jobs.runtime.spark_session import get_spark
class_archive.ARCHIVE, class_archive.NOTE = Path(sys.argv[1]), Path(sys.argv[2])
real = Path(sys.argv[3])
# the first megabyte of a real archive, noted as whole: the JVM cannot map it
class_archive.ARCHIVE.write_bytes(real.read_bytes()[:1_000_000] if real.is_file() else b"junk")
class_archive.NOTE.write_text(json.dumps({"made_for": class_archive.fingerprint(),
                                          "size": class_archive.ARCHIVE.stat().st_size}))
spark = get_spark()
print("ROWS", spark.range(3).count(), class_archive.ARCHIVE.exists())
"""


def test_a_damaged_archive_is_dropped_and_spark_starts_without_it(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _START, str(tmp_path / "classes.jsa"),
                           str(tmp_path / "classes.json"), str(class_archive.ARCHIVE)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ROWS 3" in done.stdout
    if class_archive.ARCHIVE.is_file():  # (a cut real archive crashes the JVM: it is dropped)
        assert "ROWS 3 False" in done.stdout


_FAIL = """
import json, sys
from pathlib import Path
from jobs.runtime import class_archive
from jobs.runtime.spark_session import SparkStartError, get_spark
class_archive.ARCHIVE, class_archive.NOTE = Path(sys.argv[1]), Path(sys.argv[2])
class_archive.ARCHIVE.write_bytes(b"classes")
class_archive.NOTE.write_text(json.dumps({"made_for": class_archive.fingerprint(), "size": 7}))
try:
    get_spark()
except SparkStartError as exc:
    print("FAILED", class_archive.ARCHIVE.exists(), exc)
"""


def test_a_jvm_that_fails_for_another_reason_leaves_the_archive(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REPRISE_SPARK_MASTER": "bogus"}
    done = subprocess.run([sys.executable, "-c", _FAIL, str(tmp_path / "classes.jsa"),
                           str(tmp_path / "classes.json")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.stdout.startswith("FAILED True Spark did not start with master 'bogus'"), \
        (done.stdout, done.stderr[-2000:])

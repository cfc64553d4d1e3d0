"""The project's Delta jars: pinned, fetched into a cache, one clear line when that fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.runtime import delta_jars
from jobs.runtime.delta_jars import CONNECTOR, PINNED, DeltaJarsError, cached_jars, fetch_jars
from jobs.runtime.spark_session import session_conf
from jobs.settings import Settings


def test_the_connector_matches_the_pinned_spark_line_and_python_package():
    from importlib.metadata import version

    import pyspark

    line = ".".join(pyspark.__version__.split(".")[:2])
    assert f"io.delta:delta-spark_{line}_2.13:{version('delta-spark')}" == CONNECTOR
    assert ("io.delta", f"delta-spark_{line}_2.13", version("delta-spark")) in PINNED


def test_a_cache_missing_a_jar_is_not_used(tmp_path):
    assert cached_jars(tmp_path) is None
    for group, artifact, version in list(PINNED)[:-1]:
        (tmp_path / f"{group}_{artifact}-{version}.jar").write_bytes(b"")
    assert cached_jars(tmp_path) is None


def test_a_failed_download_says_what_in_one_line_and_leaves_no_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(delta_jars, "PINNED", {("io.delta", "delta-storage", "0.0.0-none"): "0"})
    with pytest.raises(DeltaJarsError) as failed:
        fetch_jars(tmp_path / "jars")
    message = str(failed.value)
    assert "\n" not in message
    assert message.startswith(f"cannot fetch the Delta jars ({CONNECTOR}) from Maven Central")
    assert "delta-storage;0.0.0-none" in message
    assert not (tmp_path / "jars").exists()
    assert [p.name for p in tmp_path.iterdir()] == []  # (the scratch directory went too)


def test_the_fetch_command_fails_with_one_line_and_status_1(tmp_path):
    script = ("import sys; from pathlib import Path; from jobs.runtime import delta_jars as d; "
              f"d.jar_directory = lambda: Path({str(tmp_path / 'jars')!r}); sys.exit(d.main())")
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java")}  # the fetch cannot start
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False, env=env)
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot fetch the Delta jars")


def test_the_delta_spark_backend_loads_the_project_jars_without_any_jar_setting():
    jars = delta_jars.project_jars()
    _, conf = session_conf(settings=Settings.from_env({"REPRISE_DELTA_BACKEND": "delta-spark"}))
    assert conf["spark.jars"].split(",") == [str(j) for j in jars]
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert all(Path(j).is_file() for j in jars)
    _, other = session_conf(settings=Settings.from_env({"REPRISE_DELTA_BACKEND": "delta-rs"}))
    assert "spark.jars" not in other and "spark.sql.extensions" not in other

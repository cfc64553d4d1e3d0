"""Spark starts without JVM noise on stderr (``--verbose`` / REPRISE_VERBOSE=1 shows it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.runtime.spark_session import session_conf
from jobs.settings import Settings, SettingsError, load_settings

ROOT = Path(__file__).resolve().parents[2]
START = "from jobs.runtime.spark_session import get_spark; get_spark().range(3).count()"


def test_spark_starts_and_runs_a_job_with_nothing_on_stderr():
    env = {k: v for k, v in os.environ.items() if k != "REPRISE_VERBOSE"}
    env.update(PYTHONPATH=str(ROOT), REPRISE_SPARK_MASTER="local[1]")
    done = subprocess.run([sys.executable, "-c", START], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=True)
    assert done.stderr == ""


def test_a_jvm_that_does_not_start_is_one_error_naming_the_master_and_why(tmp_path):
    # before: a PySparkRuntimeError traceback (JAVA_GATEWAY_EXITED) with no reason
    code = ("from jobs.runtime.spark_session import SparkStartError, get_spark\n"
            "try:\n    get_spark()\nexcept SparkStartError as exc:\n    print(exc)\n")
    env = {k: v for k, v in os.environ.items() if k != "REPRISE_VERBOSE"}
    env.update(PYTHONPATH=str(ROOT), REPRISE_SPARK_MASTER="bogus", TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=True)
    assert done.stdout.startswith("Spark did not start with master 'bogus' "), done
    assert "Master must either be yarn or start with spark" in done.stdout, done


def test_delta_jars_that_do_not_exist_name_the_variable(tmp_path):
    # before: Spark started without them and `auto` silently chose the delta-rs backend
    jar = tmp_path / "delta-spark_4.1_2.13-4.4.1.jar"
    jar.write_bytes(b"")
    _, conf = session_conf(settings=Settings.from_env({"REPRISE_DELTA_JARS": str(jar)}))
    assert conf["spark.jars"] == str(jar)
    with pytest.raises(SettingsError, match=r"REPRISE_DELTA_JARS: no such file '/nope\.jar'"):
        session_conf(settings=Settings.from_env({"REPRISE_DELTA_JARS": f"{jar},/nope.jar"}))


def test_verbose_keeps_sparks_own_logging():
    _, quiet = session_conf(settings=Settings.from_env({}))
    _, loud = session_conf(settings=Settings.from_env({
        "REPRISE_VERBOSE": "1", "REPRISE_SPARK_CONF": "spark.driver.extraJavaOptions=-Dx=1"}))
    assert "log4j2.configurationFile" in quiet["spark.driver.extraJavaOptions"]
    loud_options = loud["spark.driver.extraJavaOptions"]  # (with the class archive's, if any)
    assert loud_options.endswith("-Dx=1") and "log4j2.configurationFile" not in loud_options


def test_the_global_verbose_option_asks_for_the_jvm_log(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from jobs.cli.app import app

    monkeypatch.setenv("REPRISE_VERBOSE", "0")  # restored after the test
    assert CliRunner().invoke(app, ["runs", "--warehouse", str(tmp_path)]).exit_code == 0
    assert not load_settings().verbose
    assert CliRunner().invoke(app, ["--verbose", "runs", "--warehouse", str(tmp_path)]
                              ).exit_code == 0
    assert load_settings().verbose

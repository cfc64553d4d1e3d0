"""How jobs.runtime.spark_session resolves the master and the conf (pure: no SparkSession is
started)."""

from __future__ import annotations

import re
import sys
from types import SimpleNamespace

import pytest
from py4j.protocol import Py4JJavaError
from pyspark import SparkContext
from pyspark.errors import PySparkRuntimeError

from jobs.runtime.code_shipping import CODE_ZIP
from jobs.runtime.masters import ClusterError
from jobs.runtime.spark_session import (
    DELTA_CONF,
    SparkStartError,
    delta_jars_configured,
    get_spark,
    parse_conf,
    session_conf,
)
from jobs.settings import Settings, SettingsError
from jobs.storage import BACKENDS, open_storage


@pytest.fixture
def jars(tmp_path) -> str:
    """REPRISE_DELTA_JARS naming two (empty) jar files that exist."""
    paths = [tmp_path / "delta-spark_2.13-4.0.0.jar", tmp_path / "delta-storage-4.0.0.jar"]
    for path in paths:
        path.write_bytes(b"")
    return ",".join(map(str, paths))


env_settings = Settings.from_env  # the settings of an environment mapping


def test_defaults():
    master, conf = session_conf(settings=env_settings({}))
    assert master == "local[*]"
    assert conf["spark.sql.session.timeZone"] == "UTC"
    assert conf["spark.sql.parquet.outputTimestampType"] == "TIMESTAMP_MICROS"
    assert conf["spark.pyspark.python"] == sys.executable
    assert conf["spark.pyspark.driver.python"] == sys.executable
    assert conf["spark.ui.enabled"] == "false"
    assert int(conf["spark.sql.shuffle.partitions"]) >= 2
    assert conf["spark.default.parallelism"] == conf["spark.sql.shuffle.partitions"]
    assert conf["spark.driver.memory"] == "4g"
    assert conf["spark.driver.bindAddress"] == conf["spark.driver.host"] == "127.0.0.1"
    assert conf["spark.python.daemon.module"] == "jobs.runtime.worker_daemon"
    for key in (*DELTA_CONF, "spark.jars", "spark.jars.packages"):
        assert key not in conf
    assert not delta_jars_configured(conf)


@pytest.mark.parametrize(("master", "partitions"), [
    ("local", "2"), ("local[1]", "2"), ("local[2]", "2"), ("local[3]", "3"), ("local[8]", "8"),
    ("local[4,2]", "4"),
])
def test_local_masters_get_few_shuffle_partitions(master, partitions):
    resolved_master, conf = session_conf(master, settings=env_settings({}))
    assert resolved_master == master
    assert conf["spark.sql.shuffle.partitions"] == partitions
    assert conf["spark.default.parallelism"] == partitions
    assert conf["spark.driver.memory"] == "4g"


def test_local_star_uses_the_cpu_count(monkeypatch):
    monkeypatch.setattr("jobs.runtime.spark_session.os.cpu_count", lambda: 6)
    partitions = "spark.sql.shuffle.partitions"
    assert session_conf("local[*]", None, env_settings({}))[1][partitions] == "6"
    monkeypatch.setattr("jobs.runtime.spark_session.os.cpu_count", lambda: None)
    assert session_conf("local[*]", None, env_settings({}))[1][partitions] == "2"


@pytest.mark.parametrize("master", ["spark://host:7077", "yarn", "k8s://https://k8s:6443"])
def test_cluster_masters_get_no_local_defaults(master):
    resolved_master, conf = session_conf(master, settings=env_settings({}))
    assert resolved_master == master
    for key in ("spark.sql.shuffle.partitions", "spark.default.parallelism",
                "spark.driver.bindAddress", "spark.driver.host", "spark.pyspark.python"):
        assert key not in conf
    assert conf["spark.sql.session.timeZone"] == "UTC"


@pytest.mark.parametrize("master", ["spark://host:7077", "local[2]"])
def test_every_master_gets_the_driver_memory_default(master):
    assert session_conf(master, settings=env_settings({}))[1]["spark.driver.memory"] == "4g"
    conf = session_conf(master, settings=env_settings(
        {"REPRISE_SPARK_CONF": "spark.driver.memory=16g"}))[1]
    assert conf["spark.driver.memory"] == "16g"


def test_cluster_executors_find_the_shipped_code_on_their_path():
    _, conf = session_conf("spark://host:7077", settings=env_settings({}))
    assert conf["spark.executorEnv.PYTHONPATH"] == CODE_ZIP
    _, conf = session_conf("spark://host:7077", settings=env_settings(
        {"REPRISE_SPARK_CONF": "spark.executorEnv.PYTHONPATH=/opt/lib"}))
    assert conf["spark.executorEnv.PYTHONPATH"].split(":") == [CODE_ZIP, "/opt/lib"]
    assert "spark.executorEnv.PYTHONPATH" not in session_conf("local[2]", settings=env_settings(
        {}))[1]


def test_a_cluster_python_from_the_conf_is_kept():
    _, conf = session_conf("spark://host:7077", settings=env_settings(
        {"REPRISE_SPARK_CONF": "spark.pyspark.python=/opt/py/bin/python3"}))
    assert conf["spark.pyspark.python"] == "/opt/py/bin/python3"


@pytest.mark.parametrize("master", ["spark://host:7077", "local[2]"])
def test_reprise_buckets_sets_the_shuffle_partitions(master):
    conf = session_conf(master, settings=env_settings({"REPRISE_BUCKETS": "5"}))[1]
    assert conf["spark.sql.shuffle.partitions"] == "5"


def test_environment_overrides_master_and_conf():
    env = {"REPRISE_SPARK_MASTER": "local[3]",
           "REPRISE_SPARK_CONF": "a=1; b=2;spark.sql.session.timeZone = Europe/Paris"}
    master, conf = session_conf(settings=env_settings(env))
    assert master == "local[3]"
    assert conf["a"] == "1" and conf["b"] == "2"
    assert conf["spark.sql.session.timeZone"] == "Europe/Paris"
    assert conf["spark.sql.shuffle.partitions"] == "3"


def test_environment_master_from_env_cluster():
    master, conf = session_conf(settings=env_settings({"REPRISE_SPARK_MASTER": "spark://host:7077"}))
    assert master == "spark://host:7077"
    assert "spark.sql.shuffle.partitions" not in conf


def test_explicit_values_win_over_environment():
    env = {"REPRISE_SPARK_MASTER": "spark://host:7077",
           "REPRISE_SPARK_CONF": "a=1;spark.driver.memory=8g"}
    master, conf = session_conf("local[2]", {"a": "explicit", "spark.driver.memory": "1g"},
                                 env_settings(env))
    assert master == "local[2]"
    assert conf["a"] == "explicit"
    assert conf["spark.driver.memory"] == "1g"
    # Explicit conf also beats the built-in defaults.
    _, conf = session_conf("local[2]", {"spark.sql.shuffle.partitions": "7"}, env_settings({}))
    assert conf["spark.sql.shuffle.partitions"] == "7"


def test_parse_conf():
    assert parse_conf("") == {}
    assert parse_conf(" ; ;") == {}
    assert parse_conf("a=1; b=2") == {"a": "1", "b": "2"}
    assert parse_conf(" a = 1 ;b=x=y;") == {"a": "1", "b": "x=y"}
    assert parse_conf("a=") == {"a": ""}
    assert parse_conf("a=1;a=2") == {"a": "2"}


@pytest.mark.parametrize(("text", "bad"), [("a=1; oops", "oops"), ("=1", "=1"),
                                            ("a=1;  =2 ;b=3", "=2")])
def test_malformed_conf_pair_raises_naming_it(text, bad):
    with pytest.raises(SettingsError, match="key=value") as info:
        parse_conf(text)
    assert repr(bad) in str(info.value)
    with pytest.raises(SettingsError) as info:
        session_conf(settings=env_settings({"REPRISE_SPARK_CONF": text}))
    assert repr(bad) in str(info.value)


def test_delta_jars_add_jars_and_delta_conf(jars):
    _, conf = session_conf(settings=env_settings({"REPRISE_DELTA_JARS": jars}))
    assert conf["spark.jars"] == jars
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert conf["spark.sql.catalog.spark_catalog"] == (
        "org.apache.spark.sql.delta.catalog.DeltaCatalog")
    assert conf["spark.databricks.delta.properties.defaults.enableDeletionVectors"] == "false"
    assert delta_jars_configured(conf)


def test_delta_packages_add_delta_conf():
    _, conf = session_conf(
        settings=env_settings({"REPRISE_DELTA_PACKAGES": "io.delta:delta-spark_2.13:4.0.0"}))
    assert conf["spark.jars.packages"] == "io.delta:delta-spark_2.13:4.0.0"
    assert "spark.jars" not in conf
    assert conf["spark.sql.extensions"] == DELTA_CONF["spark.sql.extensions"]


def test_delta_conf_can_be_overridden(jars):
    _, conf = session_conf(
        conf={"spark.databricks.delta.properties.defaults.enableDeletionVectors": "true"},
        settings=env_settings({"REPRISE_DELTA_JARS": jars}))
    assert conf["spark.databricks.delta.properties.defaults.enableDeletionVectors"] == "true"
    assert conf["spark.sql.catalog.spark_catalog"] == DELTA_CONF["spark.sql.catalog.spark_catalog"]


def test_unrelated_jars_do_not_enable_delta():
    _, conf = session_conf(
        settings=env_settings({"REPRISE_SPARK_CONF": "spark.jars=/opt/other.jar"}))
    assert conf["spark.jars"] == "/opt/other.jar"
    assert not delta_jars_configured(conf)
    for key in DELTA_CONF:
        assert key not in conf


def test_session_conf_reads_os_environ_by_default(monkeypatch):
    monkeypatch.setenv("REPRISE_SPARK_MASTER", "local[5]")
    monkeypatch.setenv("REPRISE_SPARK_CONF", "x=y")
    monkeypatch.delenv("REPRISE_DELTA_JARS", raising=False)
    monkeypatch.delenv("REPRISE_DELTA_PACKAGES", raising=False)
    master, conf = session_conf()
    assert master == "local[5]"
    assert conf["x"] == "y"


def test_open_storage_rejects_unknown_backend():
    with pytest.raises(SettingsError, match="'nope'") as info:
        open_storage(None, "nope")  # rejected before the session is touched
    for name in BACKENDS:
        assert name in str(info.value)


@pytest.mark.parametrize("value", ["abc", "-1", "0", "1.5", "", "10001"])
def test_a_bad_shuffle_partition_count_names_the_variable_and_the_key(value):
    # before: `abc` was a ValueError traceback (jobs/runtime/lazy_session.py), `-1` a run of -1
    # buckets
    env = {"REPRISE_SPARK_CONF": f"a=1; spark.sql.shuffle.partitions={value}"}
    for master in ("local[2]", "spark://host:7077"):
        with pytest.raises(SettingsError, match=(
                r"^REPRISE_SPARK_CONF: spark\.sql\.shuffle\.partitions must be an integer from 1 "
                rf"to 10,000, got {value!r}$")):
            session_conf(master, settings=env_settings(env))


@pytest.mark.parametrize("value", ["1", "7", "10000"])
def test_a_good_shuffle_partition_count_is_kept(value):
    env = {"REPRISE_SPARK_CONF": f"spark.sql.shuffle.partitions={value}"}
    assert session_conf("local[2]", settings=env_settings(env))[1][
        "spark.sql.shuffle.partitions"] == value


@pytest.mark.parametrize("master", [
    "local[abc]", "local[]", "local[2", "local[ 2]", "local[2,]", "local[2,x]", "local[-2]",
    "local2", "localhost", "local[2,1,1]", "local-cluster[2,1]", "local-cluster[a,1,1024]"])
def test_a_malformed_local_master_names_the_variable(master):
    # before: `local[abc]` was a ValueError traceback from _local_cores, `local[-2]` a Py4J one
    with pytest.raises(SettingsError, match=rf"^REPRISE_SPARK_MASTER: {re.escape(repr(master))} "
                                            "is not a local master; expected local, local\\[N\\]"):
        session_conf(settings=env_settings({"REPRISE_SPARK_MASTER": master}))


@pytest.mark.parametrize("master", ["local[0]", "local[2,0]", "local[*,0]",
                                    "local-cluster[0,1,1024]", "local-cluster[2,1,0]"])
def test_a_local_master_with_nothing_to_run_on_names_the_variable(master):
    # before: `local[0]` started the JVM and failed there with a Py4J traceback
    with pytest.raises(SettingsError, match=rf"^REPRISE_SPARK_MASTER: {re.escape(repr(master))} "
                                            "asks for 0 threads"):
        session_conf(settings=env_settings({"REPRISE_SPARK_MASTER": master}))


@pytest.mark.parametrize(("master", "partitions"), [
    ("local[2, 3]", "2"), ("local[*,3]", "6"), ("local[16]", "16")])
def test_spark_local_masters_with_failures_or_many_threads_are_accepted(monkeypatch, master,
                                                                        partitions):
    monkeypatch.setattr("jobs.runtime.spark_session.os.cpu_count", lambda: 6)
    assert session_conf(master, settings=env_settings({}))[1][
        "spark.sql.shuffle.partitions"] == partitions


def test_a_local_cluster_master_is_accepted_as_a_cluster():
    _, conf = session_conf("local-cluster[2, 1, 1024]", settings=env_settings({}))
    assert "spark.driver.bindAddress" not in conf


@pytest.fixture
def started(monkeypatch) -> None:
    """``get_spark`` finds a JVM and a context there already (stand-ins, put back after the
    test), so it goes straight to ``SparkSession.builder`` (each test's failing one): it
    launches no JVM and makes no context, which would be left, without the project's Delta
    jars, for the session of the tests that follow."""
    context = SimpleNamespace(_jsc=SimpleNamespace(sc=lambda: SimpleNamespace(
        isStopped=lambda: False)))
    monkeypatch.setattr(SparkContext, "_gateway", object())
    monkeypatch.setattr(SparkContext, "_active_spark_context", context)


class _FailingBuilder:
    """SparkSession.builder whose JVM exits at launch, or whose context stopped while the
    session was being made (``error``); with :func:`started`, no JVM is started."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error or PySparkRuntimeError(errorClass="JAVA_GATEWAY_EXITED",
                                                  messageParameters={})

    def master(self, _: str) -> _FailingBuilder:
        return self

    appName = master

    def config(self, *_: str) -> _FailingBuilder:
        return self

    def getOrCreate(self) -> None:
        raise self.error


@pytest.mark.parametrize(("env", "named"), [
    ({}, "(REPRISE_SPARK_MASTER)"),
    ({"REPRISE_DELTA_PACKAGES": "io.delta:delta-spark_2.13:4.0.0"},
     "(REPRISE_SPARK_MASTER, REPRISE_DELTA_PACKAGES)"),
    ({"REPRISE_SPARK_CONF": "a=1", "REPRISE_DELTA_JARS": "JARS"},
     "(REPRISE_SPARK_MASTER, REPRISE_SPARK_CONF, REPRISE_DELTA_JARS)"),
])
def test_a_failed_start_names_the_variables_that_were_set(monkeypatch, started, jars, env,
                                                          named):
    # before: always "(REPRISE_SPARK_MASTER, REPRISE_SPARK_CONF)", never the Delta variables
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)  # get_spark sets it
    monkeypatch.setattr("jobs.runtime.spark_session.SparkSession",
                        SimpleNamespace(builder=_FailingBuilder()))
    monkeypatch.setattr("jobs.runtime.spark_session._jvm_failure", lambda *_: ":: loading settings")
    env = {k: jars if v == "JARS" else v for k, v in env.items()}
    with pytest.raises(SparkStartError) as info:
        get_spark(settings=env_settings(env))
    assert str(info.value).startswith(
        f"Spark did not start with master 'local[*]' {named}: :: loading settings; ")


@pytest.mark.parametrize(("env", "named"), [
    ({"REPRISE_DELTA_JARS": "/etc/hostname"}, "REPRISE_DELTA_JARS (/etc/hostname)"),
    ({"REPRISE_DELTA_PACKAGES": "org.example:x:1"}, "REPRISE_DELTA_PACKAGES (org.example:x:1)")])
def test_configured_jars_without_the_delta_classes_are_named(monkeypatch, env, named):
    # before: "the Delta jars are not loaded: set REPRISE_DELTA_JARS" although it was set
    monkeypatch.setattr("jobs.storage.backend_choice.delta_jars_loadable", lambda _: False)
    with pytest.raises(SettingsError, match=rf"^Delta backend 'delta-spark' was asked for but "
                                            rf"the jars of {re.escape(named)} did not provide "
                                            "the Delta classes"):
        open_storage(object(), "delta-spark", env_settings(env))
    with pytest.raises(SettingsError, match="not loaded: set REPRISE_DELTA_JARS"):
        open_storage(object(), "delta-spark", env_settings({}))


@pytest.mark.parametrize("stopped", [True, False])
def test_a_context_that_stopped_while_starting_names_the_master(monkeypatch, started,
                                                                stopped):
    # before: a Py4JJavaError traceback from the SparkSession constructor ("Cannot call methods
    # on a stopped SparkContext") when an unreachable standalone master gave up meanwhile
    error = Py4JJavaError("An error occurred while calling None.SparkSession",
                          SimpleNamespace(_target_id="o1"))
    jvm = SimpleNamespace(isStopped=lambda: stopped)
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)  # get_spark sets it
    monkeypatch.setattr("jobs.runtime.spark_session.SparkSession",
                        SimpleNamespace(builder=_FailingBuilder(error)))
    monkeypatch.setattr(SparkContext, "_active_spark_context",
                        SimpleNamespace(_jsc=SimpleNamespace(sc=lambda: jvm)))
    settings = env_settings({"REPRISE_SPARK_MASTER": "spark://127.0.0.1:1"})
    if not stopped:  # another Java error is not taken for an unreachable master
        with pytest.raises(Py4JJavaError):
            get_spark(settings=settings)
        return
    with pytest.raises(ClusterError, match=(
            r"^the Spark master 'spark://127\.0\.0\.1:1' \(REPRISE_SPARK_MASTER\) could not be "
            "reached: the SparkContext stopped before the run started; the JVM's output is in ")):
        get_spark(settings=settings)

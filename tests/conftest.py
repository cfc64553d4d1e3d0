"""Shared fixtures: one local SparkSession for the whole run, temporary warehouses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# No per-example deadline: the laws are checked on a shared 2-core machine whose load varies,
# and a slow example is not a wrong one (each test bounds its examples instead).
settings.register_profile("reprise", deadline=None)
settings.load_profile("reprise")

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
os.environ["REPRISE_SPARK_MASTER"] = os.environ.get("REPRISE_TEST_SPARK_MASTER", "local[2]")
#: The engine the Spark tests' replays run on (``REPRISE_TEST_ENGINE``, default ``spark``).
TEST_ENGINE = os.environ.get("REPRISE_TEST_ENGINE", "spark")

ROOT = Path(__file__).resolve().parents[1]


def _load_project_delta_jars() -> None:
    """Every Spark session of the tests (and of the CLI processes they start) loads the
    project's pinned Delta jars (fetched on first use), so the delta-spark leg runs; a test that
    names no backend still gets delta-rs. When the jars cannot be had, the delta-spark tests
    skip and ``test_the_project_delta_jars_load`` fails."""
    from jobs.runtime.delta_jars import DeltaJarsError, project_jars

    os.environ.setdefault("REPRISE_DELTA_BACKEND", "delta-rs")
    if "REPRISE_DELTA_JARS" not in os.environ:
        try:
            os.environ["REPRISE_DELTA_JARS"] = ",".join(str(jar) for jar in project_jars())
        except DeltaJarsError as exc:
            print(f"warning: {exc}")


_load_project_delta_jars()


def _s3_settings() -> str:
    """The endpoint of the session's S3 server (started on first use, see :func:`s3_endpoint`),
    its AWS settings put in the environment now: before any Spark session starts its Python
    workers, which inherit them (a user's own AWS settings never reach the tests)."""
    from s3_server import aws_env, free_port

    endpoint = f"http://127.0.0.1:{free_port()}"
    os.environ.update(aws_env(endpoint))
    os.environ.pop("AWS_PROFILE", None)
    return endpoint


S3_ENDPOINT = _s3_settings()


def _skipped_for_jars(config) -> int:
    """How many tests of this session skipped because the Delta jars did not load."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    stats = reporter.stats if reporter is not None else {}
    return sum("Delta jars not loaded" in str(r.longrepr) for r in stats.get("skipped", []))


def pytest_terminal_summary(terminalreporter):
    """Say how many tests skipped for missing Delta jars: none may (the session then fails,
    see :func:`pytest_sessionfinish`, and ``test_the_project_delta_jars_load`` fails too)."""
    skipped = _skipped_for_jars(terminalreporter.config)
    if skipped:
        terminalreporter.write_line(f"{skipped} tests skipped for missing Delta jars "
                                    "(make jars): the session fails", red=True)


def pytest_collection_modifyitems(items):
    """The delta-spark leg of a test marked ``delta_spark_slow`` is marked ``slow`` too."""
    for item in items:
        spec = getattr(item, "callspec", None)
        if (item.get_closest_marker("delta_spark_slow") and spec is not None
                and spec.params.get("backend_storage") == "delta-spark"):
            item.add_marker(pytest.mark.slow)


def pytest_runtest_setup(item):
    """The replays of the tests that use Spark (all but ``tests/unit``) run on Spark: with
    ``auto`` their small runs would run in the driver and leave the Spark path untested (the
    tests of the other engine and of the choice say so). The unit tests keep ``auto``, which
    runs their small replays without Spark. Set before the test's fixtures are made."""
    if "unit" in item.path.parts:
        os.environ.pop("REPRISE_ENGINE", None)
    else:
        os.environ["REPRISE_ENGINE"] = TEST_ENGINE


def pytest_sessionfinish(session, exitstatus):
    """A session in which a test skipped for missing Delta jars fails (the delta-spark leg
    must run); the status is kept for :func:`pytest_unconfigure`."""
    if _skipped_for_jars(session.config) and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = exitstatus = pytest.ExitCode.TESTS_FAILED
    session.config._reprise_status = int(exitstatus)


def pytest_unconfigure(config):
    """End the test process without the interpreter's teardown, which delta-rs and pyarrow
    threads can turn into an abort after every test has passed (jobs/cli/process_exit.py)."""
    status = getattr(config, "_reprise_status", None)
    if status is not None:  # (no session: pytest reports its own usage error)
        from jobs.cli.process_exit import exit_now

        exit_now(status)


@pytest.fixture(scope="session", autouse=True)
def _temporary_directories_under_pytests(tmp_path_factory):
    """Directories the tests make with ``tempfile`` (one per hypothesis example, which pytest's
    function-scoped ``tmp_path`` cannot give) go under this session's pytest directory, which
    pytest prunes (it keeps the last three sessions'), not into the system's, where each suite
    run used to leave a few hundred."""
    import tempfile

    previous, tempfile.tempdir = tempfile.tempdir, str(tmp_path_factory.mktemp("tempfile"))
    yield
    tempfile.tempdir = previous


@pytest.fixture(scope="session")
def spark():
    from jobs.runtime.spark_session import get_spark

    session = get_spark()
    yield session
    session.stop()


@pytest.fixture(scope="session")
def storage(spark):
    """The default backend (delta-rs on machines without the Delta jars)."""
    from jobs.storage import open_storage

    return open_storage(spark, "delta-rs")


NO_JARS = "Delta jars not loaded (make jars; see jobs/runtime/delta_jars.py): delta-spark skipped"


def _backend(spark, monkeypatch, name: str):
    """The backend ``name`` (skipped visibly when it is delta-spark and the Delta jars did not
    load); the commands and processes the test starts use it too."""
    from jobs.runtime.spark_session import delta_jars_loadable
    from jobs.storage import open_storage

    if name == "delta-spark" and not delta_jars_loadable(spark):
        pytest.skip(NO_JARS)
    monkeypatch.setenv("REPRISE_DELTA_BACKEND", name)
    return open_storage(spark, name)


@pytest.fixture(params=["delta-rs", pytest.param("delta-spark", marks=pytest.mark.delta_spark)])
def backend_storage(request, spark, monkeypatch):
    """Each Delta backend in turn; the commands and processes the test starts use it too
    (``REPRISE_DELTA_BACKEND``)."""
    return _backend(spark, monkeypatch, request.param)


@pytest.fixture
def delta_spark_storage(spark, monkeypatch):
    """The delta-spark backend alone (for a test's smaller delta-spark instance); the commands
    and processes the test starts use it too."""
    return _backend(spark, monkeypatch, "delta-spark")


@pytest.fixture(scope="session")
def catalog():
    from engine.catalog import load_catalog

    return load_catalog(ROOT / "schemas")


@pytest.fixture
def warehouse(tmp_path):
    from jobs.warehouse import Warehouse

    return Warehouse(tmp_path / "warehouse")


@pytest.fixture(scope="session")
def s3_endpoint():
    """A moto S3 server on 127.0.0.1 for the session (tests/support/s3_server.py)."""
    from s3_server import s3_server

    with s3_server(port=int(S3_ENDPOINT.rsplit(":", 1)[1])) as endpoint:
        yield endpoint


@pytest.fixture
def s3_warehouse(s3_endpoint, monkeypatch):
    """A warehouse ``s3://<fresh bucket>/wh`` on the session's S3 server, with the AWS settings
    set in this process's environment (the commands and processes the test starts see them)."""
    import uuid

    from s3_server import aws_env

    from jobs.storage.filesystems import s3_client
    from jobs.warehouse import Warehouse

    for name, value in aws_env(s3_endpoint).items():  # (a test may have changed them)
        monkeypatch.setenv(name, value)
    bucket = f"reprise-{uuid.uuid4().hex[:12]}"
    s3_client().create_bucket(Bucket=bucket)
    return Warehouse.at(f"s3://{bucket}/wh")


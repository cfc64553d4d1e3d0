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


@pytest.fixture(scope="session")
def catalog():
    from engine.catalog import load_catalog

    return load_catalog(ROOT / "schemas")


@pytest.fixture
def warehouse(tmp_path):
    from jobs.warehouse import Warehouse

    return Warehouse(tmp_path / "warehouse")

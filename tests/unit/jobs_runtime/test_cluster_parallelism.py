"""The executors a cluster run waits for, and the project's code shipped to them (no Spark)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from types import SimpleNamespace

import pytest
from py4j.protocol import Py4JJavaError

from jobs.runtime.code_shipping import CODE_ZIP, build_code_zip, package_files
from jobs.runtime.masters import ClusterError, is_local
from jobs.runtime.parallelism import bucket_count, wait_for_executors
from jobs.settings import PROJECT_ROOT, Settings


class FakeCluster:
    """Executors that register at given instants of a fake clock."""

    def __init__(self, arrivals: list[float]) -> None:
        self.arrivals, self.now = arrivals, 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def count(self) -> int:
        return sum(t <= self.now for t in self.arrivals)


@pytest.mark.parametrize(("arrivals", "expected"), [
    ([3.0, 3.5], 2), ([1.0], 1), ([0.0, 0.0, 0.0], 3), ([2.0, 3.0, 4.5, 6.0], 4)])
def test_waits_until_the_executor_count_settles(arrivals, expected):
    cluster = FakeCluster(arrivals)
    assert wait_for_executors(cluster.count, cluster.clock, cluster.sleep, 60.0, 2.0) == expected
    assert cluster.now >= max(arrivals) + 2.0


def test_an_executor_later_than_the_settle_time_is_not_waited_for():
    cluster = FakeCluster([1.0, 10.0])
    assert wait_for_executors(cluster.count, cluster.clock, cluster.sleep, 60.0, 2.0) == 1


def test_gives_up_without_executors():
    cluster = FakeCluster([])
    assert wait_for_executors(cluster.count, cluster.clock, cluster.sleep, 5.0, 2.0) == 0
    assert 5.0 <= cluster.now < 6.0


class StoppedContext:
    """The JVM side of a SparkContext that stopped: the standalone master was never reached
    ("All masters are unresponsive! Giving up."), so every call raises as Spark's does."""

    def __init__(self, stopped: bool = True) -> None:
        self.stopped = stopped

    def isStopped(self) -> bool:
        return self.stopped

    def getExecutorMemoryStatus(self) -> None:
        raise Py4JJavaError("An error occurred while calling o1.getExecutorMemoryStatus",
                            SimpleNamespace(_target_id="o2"))


def stopped_session(stopped: bool = True) -> SimpleNamespace:
    jvm = StoppedContext(stopped)
    return SimpleNamespace(sparkContext=SimpleNamespace(
        master="spark://127.0.0.1:1", _jsc=SimpleNamespace(sc=lambda: jvm)))


def test_a_cluster_master_that_stopped_the_context_is_one_error_naming_it():
    # before: a Py4JJavaError traceback ("Cannot call methods on a stopped SparkContext")
    with pytest.raises(ClusterError, match=(
            r"^the Spark master 'spark://127\.0\.0\.1:1' \(REPRISE_SPARK_MASTER\) could not be "
            r"reached: the SparkContext stopped before the run started; the JVM's output is in ")):
        bucket_count(stopped_session(), Settings())
    with pytest.raises(ClusterError, match=r"output is above$"):
        bucket_count(stopped_session(), Settings(verbose=True))


def test_a_java_error_of_a_running_context_is_not_taken_for_an_unreachable_master():
    with pytest.raises(Py4JJavaError):
        bucket_count(stopped_session(stopped=False), Settings())


@pytest.mark.parametrize(("master", "local"), [
    ("local", True), ("local[2]", True), ("local[*]", True), ("local[4,2]", True),
    ("local-cluster[2,1,1024]", False), ("spark://127.0.0.1:7077", False), ("yarn", False)])
def test_local_masters(master, local):
    assert is_local(master) is local


def test_the_code_zip_holds_every_module_of_the_packages_and_is_reproducible(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    zipped = build_code_zip(first)
    assert zipped.name == CODE_ZIP
    assert zipped.read_bytes() == build_code_zip(second).read_bytes()
    names = zipfile.ZipFile(zipped).namelist()
    assert names == [p.as_posix() for p in package_files()]
    assert {"jobs/runtime/worker_daemon.py", "jobs/execution/keyed_steps.py", "engine/__init__.py",
            "engine/windows/family.py"} <= set(names)
    assert not any("__pycache__" in n for n in names)


def test_a_python_with_only_the_zip_on_its_path_imports_the_packages_from_it(tmp_path):
    build_code_zip(tmp_path)
    code = ("import jobs.runtime.worker_daemon, engine.registry; "
            "print(jobs.runtime.worker_daemon.__file__); print(engine.registry.__file__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, env={"PYTHONPATH": CODE_ZIP, "PATH": "/usr/bin:/bin"},
                         check=True).stdout.split()
    assert out == [str(tmp_path / CODE_ZIP / "jobs" / "runtime" / "worker_daemon.py"),
                   str(tmp_path / CODE_ZIP / "engine" / "registry.py")]
    assert str(PROJECT_ROOT) not in "".join(out)

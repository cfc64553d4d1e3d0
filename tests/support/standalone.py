"""A Spark standalone cluster on 127.0.0.1 started from the environment's pyspark (a master and
workers run with ``spark-class``), for the cluster test and ``benchmarks/cluster.py``.

Every process is started in a process group of its own (a worker's executors and their Python
workers are its children) and :meth:`StandaloneCluster.stop` kills every group it started. The
workers get no ``PYTHONPATH`` and no AWS settings and run in a directory of their own, so
executors find the project's code only where the driver ships it, and reach an object-store
warehouse only with the settings the driver passes them.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
LOOPBACK = "127.0.0.1"
_MASTER_URL = re.compile(r"Starting Spark master at (spark://[\d.]+:\d+)")
_REGISTERED = "Successfully registered with master"


@dataclass
class StandaloneCluster:
    """A master and ``workers`` workers (``cores`` cores, ``memory`` each) under ``root``."""

    root: Path
    workers: int = 2
    cores: int = 1
    memory: str = "1g"
    java_home: str = os.environ.get("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")
    url: str = ""
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k != "PYTHONPATH" and not k.startswith("AWS_")}
        env.update(SPARK_HOME=str(SPARK_HOME), JAVA_HOME=self.java_home, SPARK_LOCAL_IP=LOOPBACK,
                   SPARK_NO_DAEMONIZE="1", SPARK_LOG_DIR=str(self.root / "logs"),
                   SPARK_WORKER_DIR=str(self.root / "work"),
                   # no REST submission server (it would listen on a fixed port)
                   SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")
        return env

    def _start(self, name: str, *args: str) -> Path:
        log = self.root / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("wb") as out:
            self.processes[name] = subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), *args], stdout=out,
                stderr=subprocess.STDOUT, env=self.env(), cwd=self.root,
                start_new_session=True)
        return log

    def _await(self, name: str, log: Path, pattern: re.Pattern | str, timeout_s: float = 180.0
               ) -> re.Match | bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace")
            found = pattern.search(text) if isinstance(pattern, re.Pattern) else pattern in text
            if found:
                return found
            if self.processes[name].poll() is not None:
                raise RuntimeError(f"{name} exited: {text[-2000:]}")
            time.sleep(0.5)
        raise TimeoutError(f"{name} did not start in {timeout_s} s: see {log}")

    def start(self) -> str:
        """Start the master and the workers; return the master URL once every worker has
        registered."""
        (self.root / "work").mkdir(parents=True, exist_ok=True)
        log = self._start("master", "org.apache.spark.deploy.master.Master", "--host", LOOPBACK,
                          "--port", "0", "--webui-port", "0")
        self.url = self._await("master", log, _MASTER_URL).group(1)
        logs = {f"worker{i}": self._start_worker(f"worker{i}") for i in range(self.workers)}
        for name, worker_log in logs.items():
            self._await(name, worker_log, _REGISTERED)
        return self.url

    def _start_worker(self, name: str) -> Path:
        return self._start(name, "org.apache.spark.deploy.worker.Worker", "--host", LOOPBACK,
                           "--port", "0", "--webui-port", "0", "--cores", str(self.cores),
                           "--memory", self.memory, "--work-dir", str(self.root / "work"),
                           self.url)

    def add_worker(self, name: str) -> None:
        """Start a worker and wait until it has registered with the master."""
        self._await(name, self._start_worker(name), _REGISTERED)

    def kill(self, name: str) -> None:
        """SIGKILL a process and everything it started (a worker: its executors too)."""
        process = self.processes[name]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def stop(self) -> None:
        """Kill every process group this cluster started (workers first), then any process
        still running in the cluster's directories (PySpark's worker daemons put themselves
        in process groups of their own)."""
        for name in sorted(self.processes, key=lambda n: n == "master"):
            self.kill(name)
        for pid in self.stragglers():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def stragglers(self) -> list[int]:
        """Processes of this user whose working directory is inside the cluster's root."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cwd = Path(os.readlink(entry / "cwd"))
            except OSError:
                continue
            if cwd == self.root or self.root in cwd.parents:
                found.append(int(entry.name))
        return found

    def __enter__(self) -> StandaloneCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def cluster_env(url: str, warehouse: Path | str, **extra: str) -> dict[str, str]:
    """The environment of a ``reprise`` driver on ``url``: loopback driver, and the project on
    the driver's own path only."""
    env = dict(os.environ)
    env.update(REPRISE_SPARK_MASTER=url, REPRISE_WAREHOUSE=str(warehouse),
               SPARK_LOCAL_IP=LOOPBACK, GX_ANALYTICS_ENABLED="false",
               REPRISE_SPARK_CONF=f"spark.driver.host={LOOPBACK};"
                                  f"spark.driver.bindAddress={LOOPBACK}", **extra)
    return env

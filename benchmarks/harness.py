"""What the Spark benchmarks share: a session with a scratch directory, the vitals recording,
and median timings of replays and of Spark jobs (``noop`` sink), measured in turns."""

from __future__ import annotations

import fcntl
import os
import shutil
import statistics
import struct
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from engine.catalog import Catalog
from engine.own_directory import only_mine
from jobs.recordings.store import generate_recording
from jobs.runs.replay import Replay
from jobs.runs.run_info import RunInfo
from jobs.runtime.spark_session import get_spark
from jobs.storage import DeltaStorage, open_storage
from jobs.warehouse import Warehouse

ROOT = Path(__file__).resolve().parents[1]
#: ``ioctl`` requests for a file's attribute flags, and the flag of a directory at the top of
#: directory hierarchies (``chattr +T``)
_GET_FLAGS, _SET_FLAGS, _TOP_DIRECTORY = 0x80086601, 0x40086602, 0x00020000


def scratch_parent() -> Path:
    """The directory the benchmarks make their scratch directories in: ``reprise-bench-<uid>``
    in the temporary directory, private to this user and, where the file system has the flag
    (ext4), marked as the top of directory hierarchies, so that each scratch directory made in
    it goes to a block group the allocator picks (Orlov) instead of the one next to its parent.
    On ext4 without a journal, creating a file costs more for every inode of its block group
    freed in the last minutes (docs/contributing/benchmarking.md): without the flag a
    benchmark's files went into the block group whose inodes the previous benchmark had just
    freed, and creating one took 118 µs (468 and 739 µs after larger deletions) instead of
    about 20."""
    parent = Path(tempfile.gettempdir()) / f"reprise-bench-{os.getuid()}"
    parent.mkdir(mode=0o700, exist_ok=True)
    if parent.is_symlink() or not only_mine(parent):
        raise SystemExit(f"{parent}: the benchmarks' scratch directory must be a directory of "
                         "this user that no one else can write to")
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        flags = struct.unpack("i", fcntl.ioctl(fd, _GET_FLAGS, struct.pack("i", 0)))[0]
        if not flags & _TOP_DIRECTORY:
            fcntl.ioctl(fd, _SET_FLAGS, struct.pack("i", flags | _TOP_DIRECTORY))
    except OSError:
        pass  # a file system without the flag places directories its own way
    finally:
        os.close(fd)
    return parent


def vitals_warehouse(storage: DeltaStorage, catalog: Catalog, root: Path, name: str,
                     events: int, keys: int, commits: int) -> Warehouse:
    """A warehouse ``root/name`` holding ``events`` generated vitals events (seed 1) of
    ``keys`` patients in ``commits`` commits."""
    warehouse = Warehouse(root / name)
    generate_recording(storage, warehouse, catalog, "vitals", keys=keys, events=events, seed=1,
                       commits=commits)
    return warehouse


@dataclass(frozen=True)
class Bench:
    """A Spark session, its storage and a scratch directory removed at the end."""

    spark: SparkSession
    storage: DeltaStorage
    root: Path

    def vitals(self, catalog: Catalog, name: str, events: int, keys: int, commits: int
               ) -> Warehouse:
        """A warehouse ``name`` holding ``events`` generated vitals events (seed 1)."""
        return vitals_warehouse(self.storage, catalog, self.root, name, events, keys, commits)


@contextmanager
def bench(master: str = "local[2]") -> Iterator[Bench]:
    spark = get_spark(master)
    root = Path(tempfile.mkdtemp(prefix="reprise-bench-", dir=scratch_parent()))
    try:
        yield Bench(spark, open_storage(spark), root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def creation_latency(root: Path, files: int = 200) -> float:
    """Microseconds to create one small file (each in a directory of ten, made too) under
    ``root``, the median of three tries. A replay creates a file per query, table and batch, so
    figures that compare replays depend on it; on one disk it varied from 20 to 1,000 µs over
    minutes. The files stay until ``root`` goes: on ext4 without a
    journal, every file created skips the inodes freed in the last minute or more, so deleting
    them here would slow what is measured next."""
    tries = []
    for _ in range(3):
        scratch = Path(tempfile.mkdtemp(dir=root))
        started = time.perf_counter()
        for i in range(files):
            if i % 10 == 0:
                (scratch / str(i)).mkdir()
            (scratch / str(i - i % 10) / f"{i}.parquet").write_bytes(b"x" * 4096)
        tries.append((time.perf_counter() - started) / (files + files // 10) * 1e6)
    return statistics.median(tries)


def medians(works: dict[str, Callable[[], float]], rounds: int, warmups: int = 2
            ) -> dict[str, float]:
    """Median seconds of each work (a callable that returns the seconds it measured) over
    ``rounds`` rounds that run every work once in turn, after ``warmups`` untimed rounds. Taking
    turns exposes both sides to the same drift of the machine and of the JVM's warm-up."""
    times: dict[str, list[float]] = {name: [] for name in works}
    for i in range(warmups + rounds):
        for name, work in works.items():
            seconds = work()
            if i >= warmups:
                times[name].append(seconds)
    return {name: statistics.median(t) for name, t in times.items()}


def noop(job: DataFrame) -> Callable[[], float]:
    """A work for :func:`medians`: ``job`` written to Spark's ``noop`` sink."""

    def run() -> float:
        started = time.perf_counter()
        job.write.format("noop").mode("overwrite").save()
        return time.perf_counter() - started

    return run


@dataclass
class ReplayRuns:
    """A work for :func:`medians`: a fresh replay of ``query`` (a new run each call; its prepare
    is not timed). Keeps the last run's description and manifest."""

    replay: Replay
    query: str
    plan: str | None = None
    info: RunInfo | None = None
    manifest: pa.Table | None = None

    def __call__(self) -> float:
        info = self.replay.prepare(self.query, plan=self.plan,
                                   run_id=f"bench-{uuid.uuid4().hex[:8]}")
        started = time.perf_counter()
        manifest = self.replay.run(info)
        seconds = time.perf_counter() - started
        self.info, self.manifest = info, manifest
        return seconds

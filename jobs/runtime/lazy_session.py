"""A SparkSession started on first use, so that a command that turns out not to need Spark
(a small replay run in the driver, see :mod:`jobs.runs.replay`) does not wait seconds for the
JVM."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import nullcontext
from functools import cached_property, partial
from typing import Any

from pyspark import SparkContext
from pyspark.sql import SparkSession

from jobs.runtime.masters import is_local
from jobs.runtime.spark_session import get_spark, session_conf
from jobs.settings import Settings


class LazySpark:
    """Stands for the session :func:`jobs.runtime.spark_session.get_spark` builds from
    ``settings``; any
    attribute access starts it."""

    def __init__(self, settings: Settings, on_start: Any = None):
        self._settings = settings
        self._session: SparkSession | None = None
        self._on_start = on_start
        self._starting: Future[SparkSession] | None = None

    @property
    def started(self) -> bool:
        return self._session is not None

    @property
    def ready(self) -> bool:
        """The session is up, or its start in the background has ended (its first use does not
        wait)."""
        return self._session is not None or (self._starting is not None
                                              and self._starting.done())

    def start_error(self, wait: bool = False) -> BaseException | None:
        """Why the start in the background failed; None when it succeeded, or has not ended
        (``wait``: wait for it to end), or was not asked for."""
        if self._starting is None or not (wait or self._starting.done()):
            return None
        return self._starting.exception()

    def start_in_background(self, launch_here: bool = False) -> None:
        """Make the session and run a one-task job (which starts the Python workers) in a
        background thread, while the command goes on (reads the catalog, pins the recording,
        plans its batches, or runs its first batches in the driver); the first use of the
        session waits for it (and raises its error). The JVM is launched in the thread too, or,
        ``launch_here``, first in this one (measured no slower for a command forced onto
        Spark). The thread does not keep the process alive: a command that ends without the
        session leaves it unfinished (the JVM exits with the process)."""
        if self._session is None and self._starting is None:
            if launch_here:
                try:
                    get_spark(settings=self._settings, launch_only=True)
                except BaseException as exc:  # (raised by the session's first use)
                    self._starting = Future()
                    self._starting.set_exception(exc)
                    return
            self._starting = in_background(self._warm, name="reprise-spark-start")

    def _warm(self) -> SparkSession:
        workers: list[Future[None]] = []

        def start_workers(context: SparkContext) -> None:  # while the session is made
            workers.append(in_background(one_task_job, context, name="reprise-spark-workers"))

        spark = get_spark(settings=self._settings, on_context=start_workers)
        if workers:
            workers[0].result()
        else:  # (the context was up already)
            one_task_job(spark.sparkContext)
        return spark

    @property
    def session(self) -> SparkSession:
        if self._session is None:
            start = self._starting.result if self._starting is not None else \
                partial(get_spark, settings=self._settings)
            with self._on_start() if self._on_start is not None else nullcontext():
                self._session = start()
        return self._session

    def shuffle_partitions(self) -> int | None:
        """The session's shuffle partition count, known without starting it for a local master
        (None otherwise)."""
        return self._local_count("spark.sql.shuffle.partitions")

    def default_parallelism(self) -> int | None:
        """The session's default parallelism (the tasks its jobs run at once: its cores),
        known without starting it for a local master (None otherwise)."""
        return self._local_count("spark.default.parallelism")

    def _local_count(self, name: str) -> int | None:
        """The conf value ``name`` of the session, when its master is local and sets it."""
        master, conf = self._conf
        value = conf.get(name)
        return int(value) if is_local(master) and value else None

    @cached_property
    def _conf(self) -> tuple[str, dict[str, str]]:
        """The session's master and conf (:func:`session_conf`), made once: the engine choice
        asks for its cores at every batch group, and making the conf checks the jars and the
        class archive on disk."""
        return session_conf(settings=self._settings)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


def one_task_job(context: SparkContext) -> None:
    """Run a job of one empty task, which starts the Python workers (their daemon's imports)."""
    context.parallelize([0], 1).foreach(lambda _: None)


def in_background(call: Callable[..., Any], *args: Any, name: str) -> Future:
    """``call(*args)`` in a daemon thread (it does not keep the process alive): its result or
    its error."""
    done: Future = Future()

    def run() -> None:
        try:
            done.set_result(call(*args))
        except BaseException as exc:  # (handed to whoever waits for it)
            done.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return done


def not_started(spark: object) -> LazySpark | None:
    """``spark`` when it is a :class:`LazySpark` that has not started, else None."""
    return spark if isinstance(spark, LazySpark) and not spark.started else None

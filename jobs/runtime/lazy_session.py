"""A SparkSession started on first use, so that a command that turns out not to need Spark
(a small replay run in the driver, see :mod:`jobs.runs.replay`) does not wait seconds for the
JVM."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from functools import partial
from typing import Any

from pyspark.sql import SparkSession

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

    def start_in_background(self) -> None:
        """Launch the JVM now, then make the session and run a one-task job (which starts the
        Python workers) in a thread, while the command reads the catalog, pins the recording and
        plans its batches; the first use of the session waits for it (and raises its error)."""
        if self._session is None and self._starting is None:
            get_spark(settings=self._settings, launch_only=True)  # (its stderr: this thread's)
            self._starting = ThreadPoolExecutor(1, "reprise-spark-start").submit(self._warm)

    def _warm(self) -> SparkSession:
        spark = get_spark(settings=self._settings)
        spark.sparkContext.parallelize([0], 1).foreach(lambda _: None)
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
        master, conf = session_conf(settings=self._settings)
        value = conf.get("spark.sql.shuffle.partitions")
        return int(value) if master.startswith("local") and value else None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


def not_started(spark: object) -> LazySpark | None:
    """``spark`` when it is a :class:`LazySpark` that has not started, else None."""
    return spark if isinstance(spark, LazySpark) and not spark.started else None

"""A SparkSession started on first use, so that a command that turns out not to need Spark
(a small replay run in the driver, see :mod:`jobs.runs.replay`) does not wait seconds for the
JVM."""

from __future__ import annotations

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

    @property
    def started(self) -> bool:
        return self._session is not None

    @property
    def session(self) -> SparkSession:
        if self._session is None:
            if self._on_start is not None:
                with self._on_start():
                    self._session = get_spark(settings=self._settings)
            else:
                self._session = get_spark(settings=self._settings)
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

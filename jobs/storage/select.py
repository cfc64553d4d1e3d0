"""Choose the Delta backend: explicit, or ``auto`` (native only when its jars load)."""

from __future__ import annotations

import os

from pyspark.sql import SparkSession

from ..spark import delta_jars_configured, delta_jars_loadable, get_spark, session_conf
from .base import DeltaStorage
from .delta_rs import DeltaRsStorage
from .delta_spark import DeltaSparkStorage

BACKENDS = ("auto", "delta-rs", "delta-spark")


def _named(backend: str | None) -> str:
    """``backend``, else ``REPRISE_DELTA_BACKEND``, else ``auto``; ValueError when unknown."""
    backend = backend or os.environ.get("REPRISE_DELTA_BACKEND", "auto")
    if backend not in BACKENDS:
        raise ValueError(f"unknown Delta backend {backend!r}; "
                         f"expected one of {', '.join(BACKENDS)}")
    return backend


def open_storage(spark: SparkSession, backend: str | None = None) -> DeltaStorage:
    """Storage for ``backend`` (default: ``REPRISE_DELTA_BACKEND`` or ``auto``)."""
    backend = _named(backend)
    if backend == "delta-spark" and not delta_jars_loadable(spark):
        raise RuntimeError("Delta backend 'delta-spark' was asked for but the Delta jars are not "
                           "loaded: set REPRISE_DELTA_JARS to the jar paths (see README)")
    if backend == "delta-spark" or (backend == "auto" and delta_jars_loadable(spark)):
        return DeltaSparkStorage(spark)
    return DeltaRsStorage(spark)


def open_driver_storage(backend: str | None = None) -> DeltaStorage:
    """Storage for Arrow tables on the driver only (``reprise record``).

    delta-rs reads and writes Arrow tables without Spark, so a SparkSession (seconds to start) is
    started only when the backend is delta-spark, or ``auto`` with the Delta jars configured.
    """
    backend = _named(backend)
    if backend == "delta-rs" or (
            backend == "auto" and not delta_jars_configured(session_conf()[1])):
        return DeltaRsStorage(spark=None)  # type: ignore[arg-type]  # no Spark method is used
    return open_storage(get_spark(), backend)

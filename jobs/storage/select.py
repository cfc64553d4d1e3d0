"""Choose the Delta backend: explicit, or ``auto`` (native only when its jars load)."""

from __future__ import annotations

import os

from pyspark.sql import SparkSession

from ..spark import delta_jars_loadable
from .base import DeltaStorage
from .delta_rs import DeltaRsStorage
from .delta_spark import DeltaSparkStorage

BACKENDS = ("auto", "delta-rs", "delta-spark")


def open_storage(spark: SparkSession, backend: str | None = None) -> DeltaStorage:
    """Storage for ``backend`` (default: ``REPRISE_DELTA_BACKEND`` or ``auto``)."""
    backend = backend or os.environ.get("REPRISE_DELTA_BACKEND", "auto")
    if backend not in BACKENDS:
        raise ValueError(f"unknown Delta backend {backend!r}; "
                         f"expected one of {', '.join(BACKENDS)}")
    if backend == "delta-spark" and not delta_jars_loadable(spark):
        raise RuntimeError("Delta backend 'delta-spark' was asked for but the Delta jars are not "
                           "loaded: set REPRISE_DELTA_JARS to the jar paths (see README)")
    if backend == "delta-spark" or (backend == "auto" and delta_jars_loadable(spark)):
        return DeltaSparkStorage(spark)
    return DeltaRsStorage(spark)

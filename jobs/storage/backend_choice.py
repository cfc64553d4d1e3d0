"""Choose the Delta backend: explicit, or ``auto`` (native only when its jars load)."""

from __future__ import annotations

from pyspark.sql import SparkSession

from jobs.runtime.spark_session import (
    delta_jars_configured,
    delta_jars_loadable,
    get_spark,
    session_conf,
)
from jobs.settings import BACKENDS, Settings, SettingsError, load_settings
from jobs.storage.base import DeltaStorage
from jobs.storage.delta_rs import DeltaRsStorage
from jobs.storage.delta_spark import DeltaSparkStorage


def _named(backend: str | None, settings: Settings | None) -> str:
    """``backend``, else the settings' ``REPRISE_DELTA_BACKEND``; SettingsError when unknown."""
    source = "--backend" if backend else "REPRISE_DELTA_BACKEND"
    backend = backend or (load_settings() if settings is None else settings).delta_backend
    if backend not in BACKENDS:
        raise SettingsError(f"{source}: unknown Delta backend {backend!r}; "
                            f"expected one of {', '.join(BACKENDS)}")
    return backend


def open_storage(spark: SparkSession, backend: str | None = None,
                 settings: Settings | None = None) -> DeltaStorage:
    """Storage for ``backend`` (default: the settings' ``REPRISE_DELTA_BACKEND``)."""
    backend = _named(backend, settings)
    if backend == "delta-spark" and not delta_jars_loadable(spark):
        why = _jars_not_loaded(load_settings() if settings is None else settings)
        raise SettingsError(f"Delta backend 'delta-spark' was asked for but {why}")
    if backend == "delta-spark" or (backend == "auto" and delta_jars_loadable(spark)):
        return DeltaSparkStorage(spark)
    return DeltaRsStorage(spark)


def _jars_not_loaded(settings: Settings) -> str:
    """Why the Delta classes are missing: the configured jars or packages lack them, or none
    are configured."""
    configured = [f"{name} ({value})" for name, value in (
        ("REPRISE_DELTA_JARS", settings.delta_jars),
        ("REPRISE_DELTA_PACKAGES", settings.delta_packages)) if value]
    if not configured:
        return ("the Delta jars are not loaded: set REPRISE_DELTA_JARS to the jar paths (see "
                "docs/operations/storage.md)")
    return (f"the jars of {' and '.join(configured)} did not provide the Delta classes "
            "(io.delta.tables.DeltaTable and its session extension; see "
            "docs/operations/storage.md)")


def open_driver_storage(backend: str | None = None,
                        settings: Settings | None = None) -> DeltaStorage:
    """Storage for Arrow tables on the driver only (``reprise record``).

    delta-rs reads and writes Arrow tables without Spark, so a SparkSession (seconds to start) is
    started only when the backend is delta-spark, or ``auto`` with the Delta jars configured.
    """
    backend = _named(backend, settings)
    if backend == "delta-rs" or (
            backend == "auto" and not delta_jars_configured(session_conf(settings=settings)[1])):
        return DeltaRsStorage(spark=None)  # type: ignore[arg-type]  # no Spark method is used
    return open_storage(get_spark(settings=settings), backend, settings)

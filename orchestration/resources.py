"""Dagster resources: a lazily started SparkSession and the Delta warehouse."""

from __future__ import annotations

import dagster as dg
from pydantic import Field, PrivateAttr

from jobs.settings import Settings, load_settings


class SparkResource(dg.ConfigurableResource):
    """The process's SparkSession, started on first use (master and conf configurable)."""

    master: str | None = None  # default: the settings' (REPRISE_SPARK_MASTER)
    conf: dict[str, str] = Field(default_factory=dict)

    _session = PrivateAttr(default=None)

    def session(self):
        if self._session is None:
            from jobs.runtime.spark_session import get_spark

            self._session = get_spark(self.master, self.conf)
        return self._session


class WarehouseResource(dg.ConfigurableResource):
    """Where recordings and runs live, the catalog directory and the Delta backend."""

    root: str
    catalog: str
    backend: str  # auto | delta-rs | delta-spark

    _storage = PrivateAttr(default=None)

    def warehouse(self):
        from jobs.warehouse import Warehouse

        return Warehouse.at(self.root)

    def load_catalog(self):
        from engine.catalog import load_catalog

        return load_catalog(self.catalog)

    def storage(self, spark: SparkResource):
        if self._storage is None:
            from jobs.storage import open_storage

            backend = self.backend
            if self.warehouse().remote:  # (an object store: delta-rs)
                from jobs.storage.filesystems import remote_backend

                backend = remote_backend(self.root, backend)
            self._storage = open_storage(spark.session(), backend)
        return self._storage

    def replay(self, spark: SparkResource):
        from jobs.runs.replay import Replay

        return Replay(spark.session(), self.storage(spark), self.warehouse(),
                      self.load_catalog())


def default_resources(catalog: str | None = None, settings: Settings | None = None
                      ) -> dict[str, dg.ConfigurableResource]:
    """Resources configured from ``settings`` (default: the environment's; see
    docs/reference/settings.md); ``catalog`` overrides the settings' catalog directory."""
    settings = load_settings() if settings is None else settings
    return {
        "spark": SparkResource(master=settings.spark_master),
        "warehouse": WarehouseResource(
            root=str(settings.warehouse), catalog=catalog or str(settings.catalog),
            backend=settings.delta_backend),
    }

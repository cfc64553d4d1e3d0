"""Dagster resources: a lazily started SparkSession and the Delta warehouse."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
from pydantic import Field, PrivateAttr

PROJECT_ROOT = Path(__file__).resolve().parents[1]


class SparkResource(dg.ConfigurableResource):
    """The process's SparkSession, started on first use (master and conf configurable)."""

    master: str | None = None  # default: REPRISE_SPARK_MASTER or local[*]
    conf: dict[str, str] = Field(default_factory=dict)

    _session = PrivateAttr(default=None)

    def session(self):
        if self._session is None:
            from jobs.spark import get_spark

            self._session = get_spark(self.master, self.conf)
        return self._session


class WarehouseResource(dg.ConfigurableResource):
    """Where recordings and runs live, the catalog directory and the Delta backend."""

    root: str | None = None  # default: REPRISE_WAREHOUSE or ./warehouse
    catalog: str = str(PROJECT_ROOT / "schemas")
    backend: str = "auto"  # auto | delta-rs | delta-spark

    _storage = PrivateAttr(default=None)

    def warehouse(self):
        from jobs.warehouse import Warehouse

        return Warehouse.from_env(self.root)

    def load_catalog(self):
        from engine.catalog import load_catalog

        return load_catalog(self.catalog)

    def storage(self, spark: SparkResource):
        if self._storage is None:
            from jobs.storage import open_storage

            self._storage = open_storage(spark.session(), self.backend)
        return self._storage

    def replay(self, spark: SparkResource):
        from jobs.replay import Replay

        return Replay(spark.session(), self.storage(spark), self.warehouse(),
                      self.load_catalog())


def default_resources(catalog: str | None = None) -> dict[str, dg.ConfigurableResource]:
    """Resources configured from the environment (see README, Configuration)."""
    return {
        "spark": SparkResource(),
        "warehouse": WarehouseResource(
            root=os.environ.get("REPRISE_WAREHOUSE"),
            catalog=catalog or os.environ.get("REPRISE_CATALOG", str(PROJECT_ROOT / "schemas")),
            backend=os.environ.get("REPRISE_DELTA_BACKEND", "auto")),
    }

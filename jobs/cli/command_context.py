"""One command's settings, warehouse, catalog, storage and replay runner, and Spark's start
(after which Ctrl-C ends the command with one line)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from engine.catalog import Catalog, load_catalog
from jobs.cli.output import console, err
from jobs.cli.process_exit import exit_now
from jobs.settings import Settings, catalog_notice, load_settings


def catalog_of(settings: Settings, catalog: Path | None) -> Catalog:
    """The catalog of ``--catalog``, else of the settings (``REPRISE_CATALOG``, else the current
    directory's); a line on stderr when it is the bundled sample catalog."""
    if catalog is None and (notice := catalog_notice(os.environ, Path.cwd())):
        err.print(f"note: {notice}", highlight=False, soft_wrap=True)
    return load_catalog(catalog or settings.catalog)


@contextmanager
def starting_spark() -> Iterator[None]:
    """Say that Spark is starting; once it has, Ctrl-C ends the command with one line (PySpark's
    own handler would cancel the jobs from inside a gateway call and end in a traceback)."""
    with console.status("starting Spark..."):
        yield
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, interrupted)


def interrupted(signum: int, frame: object) -> None:
    """Ctrl-C while Spark runs: end now (every write is resumable or all-or-nothing; the Spark
    JVM exits when its gateway closes)."""
    err.print("[bold red]error:[/] interrupted; run the same command again to resume a replay "
              "after its last committed batch", highlight=False)
    exit_now(130)


def open_warehouse(location: str):
    """The warehouse at ``location`` (a directory or URI), an object-store one probed before
    anything else runs (:func:`jobs.storage.filesystems.probe`)."""
    from jobs.storage.filesystems import probe
    from jobs.warehouse import Warehouse

    warehouse = Warehouse.at(location)
    if warehouse.remote:
        probe(str(warehouse.root))
    return warehouse


class Context:
    """Settings, warehouse, catalog and a lazily built Spark session and storage for one
    command."""

    def __init__(self, warehouse: str | None, catalog: Path | None, backend: str | None):
        settings = load_settings()  # (--backend delta-spark: the session loads the Delta jars)
        self.settings = replace(settings, delta_backend=backend) if backend else settings
        self.warehouse = open_warehouse(warehouse or self.settings.warehouse)
        if self.warehouse.remote:
            from jobs.storage.filesystems import remote_backend

            backend = remote_backend(str(self.warehouse.root), self.settings.delta_backend)
            self.settings = replace(self.settings, delta_backend=backend)
        self.catalog = catalog_of(self.settings, catalog)
        self._backend = backend
        self._storage = None

    @property
    def storage(self):
        if self._storage is None:
            from jobs.runtime.spark_session import get_spark
            from jobs.storage import open_storage

            with starting_spark():
                self._storage = open_storage(get_spark(settings=self.settings), self._backend,
                                             self.settings)
        return self._storage

    def replay(self):
        """The replay runner; with the delta-rs backend Spark starts only when the run needs it
        (see :mod:`jobs.runs.engine_choice`), and, when the replay is forced onto Spark, in the
        background while the command prepares the run."""
        from jobs.runtime.lazy_session import LazySpark
        from jobs.storage import open_driver_storage
        from jobs.storage.delta_rs import DeltaRsStorage

        if self._storage is None and isinstance(
                open_driver_storage(self._backend, self.settings), DeltaRsStorage):
            spark = LazySpark(self.settings, starting_spark)
            if self.settings.engine == "spark":
                spark.start_in_background(launch_here=True)
            self._storage = DeltaRsStorage(spark)  # type: ignore[arg-type]  # started on use
        from jobs.runs.replay import Replay

        return Replay(self.storage.spark, self.storage, self.warehouse, self.catalog,
                      settings=self.settings)

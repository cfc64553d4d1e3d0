"""Write recordings to Delta: synthetic ones (``reprise generate``) and user files (``record``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.catalog import Catalog, RecordingSpec
from engine.errors import RepriseError

from ..storage import DeltaStorage
from ..warehouse import Warehouse
from .generators import generate
from .ingest import QUARANTINE_SCHEMA, read_file


class RecordingExists(RepriseError):
    """``generate`` would replace an existing recording without ``replace=True``."""


@dataclass(frozen=True)
class FileReport:
    """What ``record`` did with one file."""

    source: str
    rows: int
    recorded: int
    quarantined: int
    version: int | None  # recording version of the commit (None when no row fitted)


def generate_recording(storage: DeltaStorage, warehouse: Warehouse, catalog: Catalog, kind: str,
                       *, keys: int, events: int, seed: int, commits: int = 10,
                       replace: bool = False,
                       on_commit: Callable[[int], None] | None = None) -> dict[str, int]:
    """Write a synthetic recording as ``commits`` Delta commits; returns table -> version."""
    spec = catalog.recording(kind)
    path = warehouse.recording(spec.name)
    if storage.exists(path) and not replace:
        raise RecordingExists(f"recording {spec.name!r} already exists at {path}; pass --replace "
                              "to overwrite it (earlier versions stay readable by time travel)")
    generated = generate(kind, keys=keys, events=events, seed=seed, commits=commits)
    meta = {"reprise.generator": kind, "reprise.seed": str(seed), "reprise.keys": str(keys),
            "reprise.events": str(events)}
    versions = {}
    for i, table in enumerate(generated.commits):
        mode = "overwrite" if i == 0 else "append"
        versions[spec.name] = storage.write(table.cast(spec.arrow_schema()), path, mode=mode,
                                            metadata={**meta, "reprise.commit": str(i)}).version
        if on_commit:
            on_commit(i)
    for name, table in generated.extra.items():
        extra = catalog.recording(name)
        versions[name] = storage.write(table.cast(extra.arrow_schema()),
                                       warehouse.recording(name), mode="overwrite",
                                       metadata=meta).version
    return versions


def record_files(storage: DeltaStorage, warehouse: Warehouse, spec: RecordingSpec,
                 files: Sequence[str | Path]) -> list[FileReport]:
    """Append each file as one commit; rows that do not fit go to ``quarantine/<name>``.

    Every file is parsed before anything is written, so a file that cannot be read at all
    (an :class:`~jobs.recordings.ingest.IngestError`) stops the command with nothing recorded.
    """
    results = [read_file(f, spec) for f in files]
    reports = []
    for result in results:
        version = None
        meta = {"reprise.source": result.source}
        if result.good.num_rows:
            version = storage.write(result.good, warehouse.recording(spec.name),
                                    metadata=meta).version
        if result.quarantined.num_rows:
            storage.write(result.quarantined.cast(QUARANTINE_SCHEMA),
                          warehouse.quarantine(spec.name), metadata=meta)
        reports.append(FileReport(source=result.source, rows=result.total,
                                  recorded=result.good.num_rows,
                                  quarantined=result.quarantined.num_rows, version=version))
    return reports


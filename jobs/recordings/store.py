"""Write recordings to Delta: synthetic ones (``reprise generate``) and user files (``record``)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow as pa

from engine.catalog import Catalog
from engine.errors import RepriseError
from engine.specs import RecordingSpec
from jobs.recordings.commits import (
    FILES_KEY,
    RECORD_KEY,
    RecordedFile,
    files_metadata,
    new_record_id,
    record_txn,
    recorded_hashes,
    roll_back_orphans,
)
from jobs.recordings.generators import generate
from jobs.recordings.ingest import QUARANTINE_SCHEMA, IngestError, IngestResult, read_file
from jobs.recordings.layout import stage_laid_out
from jobs.storage import DeltaStorage, StagedFile
from jobs.storage.staging import stage_table
from jobs.warehouse import Warehouse


class RecordingExists(RepriseError):
    """``generate`` would replace an existing recording without ``replace=True``."""


@dataclass(frozen=True)
class FileReport:
    """What ``record`` did with one file."""

    source: str
    sha256: str
    rows: int
    recorded: int
    quarantined: int
    version: int | None  # recording version holding the file's rows (None: not committed)
    skipped: str | None = None  # why the file was not recorded (again)


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
        versions[spec.name] = _write_laid_out(storage, path, spec, table, i == 0,
                                              {**meta, "reprise.commit": str(i)})
        if on_commit:
            on_commit(i)
    for name, table in generated.extra.items():
        versions[name] = _write_laid_out(storage, warehouse.recording(name),
                                         catalog.recording(name), table, True, meta)
    return versions


def _write_laid_out(storage: DeltaStorage, path: str, spec: RecordingSpec, table: pa.Table,
                    replace: bool, metadata: dict[str, str]) -> int | None:
    """Commit ``table`` to the recording at ``path`` as one data file in the key-hash layout
    (:mod:`jobs.recordings.layout`),
    replacing its live files when ``replace``; the new version."""
    schema = spec.arrow_schema()
    remove = [f.path for f in storage.live_files(path)] if replace and storage.exists(
        path) else []
    staged = stage_laid_out(storage, path, table.cast(schema), spec.key)
    return storage.commit_files(path, [staged], schema, remove=remove, metadata=metadata).version


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file's bytes; IngestError when it cannot be read."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise IngestError(str(path), f"cannot read file: {exc.strerror or exc}") from exc
    return digest.hexdigest()


def record_files(storage: DeltaStorage, warehouse: Warehouse, spec: RecordingSpec,
                 files: Sequence[str | Path], *, again: bool = False,
                 on_file: Callable[[FileReport], None] | None = None) -> list[FileReport]:
    """Append the files' good rows to the recording and their other rows to ``quarantine/<name>``,
    all or nothing (:mod:`jobs.recordings.commits`): one commit on each table for all the files.

    A file whose content (sha256) the recording already holds, or that repeats an earlier file
    of ``files``, is skipped unless ``again``. Every file is parsed before anything is written,
    so a file that cannot be read at all (an :class:`~jobs.recordings.ingest.IngestError`) stops
    the command with nothing recorded. ``on_file`` sees each file's report once it is read.
    """
    recording, quarantine = warehouse.recording(spec.name), warehouse.quarantine(spec.name)
    known = {} if again else recorded_hashes(storage, recording)
    given: dict[str, str] = {}
    reports: list[FileReport] = []
    results: list[IngestResult] = []
    for path in files:
        source, digest = str(path), file_sha256(path)
        skipped = None
        if digest in known:
            skipped = f"already recorded in version {known[digest]} of recording {spec.name!r}"
        elif digest in given and not again:
            skipped = f"same content as {given[digest]}, given before it"
        if skipped:
            report = FileReport(source, digest, 0, 0, 0, known.get(digest), skipped)
        else:
            result = read_file(path, spec)
            results.append(result)
            report = FileReport(source, digest, result.total, result.good.num_rows,
                                result.quarantined.num_rows, None)
        given.setdefault(digest, source)
        reports.append(report)
        if on_file:
            on_file(report)
    if not results:
        return reports

    roll_back_orphans(storage, recording, quarantine)
    record_id = new_record_id()
    bad = [r.quarantined for r in results if r.quarantined.num_rows]
    if bad:
        storage.commit_files(quarantine, _staged(storage, quarantine, bad), QUARANTINE_SCHEMA,
                             metadata={RECORD_KEY: record_id})
    written = [r for r in reports if r.skipped is None]
    listed = files_metadata(RecordedFile(r.source, r.sha256, r.rows, r.recorded, r.quarantined)
                            for r in written)
    good = [r.good for r in results if r.good.num_rows]
    version = storage.commit_files(recording, _staged(storage, recording, good, spec.key),
                                   spec.arrow_schema(), txn=record_txn(record_id),
                                   metadata={RECORD_KEY: record_id, FILES_KEY: listed}).version
    return [r if r.skipped else replace(r, version=version) for r in reports]


def _staged(storage: DeltaStorage, path: str, tables: list[pa.Table], key: str | None = None
            ) -> list[StagedFile]:
    """``tables`` one after the other as one Parquet file for a commit on ``path`` (none when
    there are none), written by pyarrow, which keeps the rows in order: delta-rs's
    ``write_deltalake`` writes a table of several chunks in an order of its own (a recording's
    row order is its arrival order); ``key``: in the key-hash layout of that key column
    (:mod:`jobs.recordings.layout`: the arrival order is kept in a column)."""
    if not tables:
        return []
    rows = pa.concat_tables(tables)
    return [stage_table(storage, path, rows) if key is None else
            stage_laid_out(storage, path, rows, key)]

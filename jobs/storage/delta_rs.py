"""Delta through delta-rs: the log is handled by ``deltalake``, Spark reads and writes Parquet.

A run's per-batch commits in append mode to a plain table (files added; a state commit
also removes its buckets' previous files) are written by this module itself
(:meth:`DeltaRsStorage._append`: one JSON log entry, created only if absent, as delta-rs writes
it: locally a link, on an object store a conditional put), and so is the first commit of a new
table in append mode (:meth:`DeltaRsStorage._make`: delta-rs's version 0, default
protocol). delta-rs's own commit and the refresh of its handle after it cost milliseconds
locally, and on an object store several requests (it lists the log and reads entries again),
which a replay pays on every table of every batch. Everything else (an overwrite, a table with
writer features or column invariants, removes from an append-only table, a checkpoint's
version) goes through delta-rs. On an object store executors
read and write data files through pyarrow (:mod:`~jobs.storage.arrow_reads`, ``arrow_writes``).
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, Schema, write_deltalake
from deltalake.exceptions import DeltaError, TableNotFoundError
from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

import jobs.storage.delta_log as delta_log
from jobs.storage.arrow_reads import read_files
from jobs.storage.arrow_writes import stage_dataframe
from jobs.storage.base import (
    FILE_COLUMN,
    ROW_COLUMN,
    DataFile,
    DeltaStorage,
    LiveFile,
    StagedFile,
    StorageError,
    Txn,
    UnsupportedTableFeature,
    WriteMode,
    WriteResult,
    done_already,
    positioned,
    unsupported_features,
    with_arrival,
)
from jobs.storage.delta_log import entry_exists, first_added, last_checkpoint, log_dir
from jobs.storage.locations import is_remote, local_path
from jobs.storage.log_entries import (
    CHECKPOINT_INTERVAL,
    PLAIN_PATH,
    Appends,
    appends_plainly,
    change_actions,
    checkpoint_interval,
    commit_info,
    commit_properties,
    create_entry,
    entry_text,
    no_log,
    relative_path,
    table_entry,
)
from jobs.storage.snapshot_memo import keep, recall, table_made


def _file_paths(dt: DeltaTable) -> list[str]:
    """The snapshot's data files as plain local paths (``file_uris`` are percent-encoded)."""
    return [unquote(local_path(u)) for u in dt.file_uris()]


#: How many versions past the one it was opened at a table's handle is brought up to date before
#: it is opened again (from the latest checkpoint; delta-rs 1.6 updates a handle more slowly with
#: every version it has read since it was opened, see :meth:`DeltaRsStorage.checkpoint`).
REOPEN_AFTER = 100


@dataclass
class DeltaRsStorage(DeltaStorage):
    """The default backend: needs no Delta jars."""

    name: str = field(init=False, default="delta-rs")
    #: :meth:`files` of versions, and snapshots of their past versions, by path and version,
    #: with the table's ``table_made`` (a version never changes, but a table can be made again
    #: at its path); the last ``KEPT`` of each (:mod:`jobs.storage.snapshot_memo`).
    _file_lists: dict[tuple, tuple] = field(init=False, default_factory=dict, repr=False)
    _snapshots: dict[tuple, tuple] = field(init=False, default_factory=dict, repr=False)
    #: Open handles on tables this process commits to, brought up to date before each use
    #: (reading the new log entries is cheaper than opening the table again).
    _latest: dict[str, DeltaTable] = field(init=False, default_factory=dict, repr=False)
    #: The appends this process wrote past its open handle's version, or since it made the
    #: table (no handle needed). The handle reads them when next brought up to date
    #: (:meth:`_current`); commits and :meth:`version` need not.
    _appended: dict[str, Appends] = field(init=False, default_factory=dict, repr=False)
    #: Per handle of ``_latest``: the version it was opened at (see :data:`REOPEN_AFTER`), its
    #: table's :func:`table_made` then, and the newest version :meth:`version` found since.
    _opened: dict[str, tuple] = field(init=False, default_factory=dict, repr=False)

    def _current(self, path: str) -> DeltaTable | None:
        """The table at ``path`` at its latest version, or None when there is no table."""
        root = local_path(path).rstrip("/")
        dt = self._latest.get(root)
        # (a handle whose version's log entry is gone belongs to a table deleted and made again:
        # it is opened afresh below)
        if dt is not None and entry_exists(root, dt.version()) and (
                dt.version() - self._opened.get(root, (0, None))[0] < REOPEN_AFTER):
            if entry_exists(root, dt.version() + 1):  # another writer committed since
                try:
                    dt.update_incremental()
                except DeltaError as exc:
                    raise StorageError(f"cannot open Delta table {path}: {exc}") from exc
            return dt
        if not DeltaTable.is_deltatable(root):
            return None
        self._latest[root] = dt = self._table(root)
        self._opened[root] = (dt.version(), table_made(root), dt.version())
        return dt

    def _table(self, path: str, version: int | None = None) -> DeltaTable:
        try:
            return DeltaTable(local_path(path), version=version)
        except TableNotFoundError as exc:
            raise StorageError(f"no Delta table at {path}") from exc
        except DeltaError as exc:
            raise StorageError(f"cannot open Delta table {path}"
                               f"{'' if version is None else f' at version {version}'}: {exc}"
                               ) from exc

    def _readable(self, path: str, version: int | None = None) -> DeltaTable:
        root = local_path(path).rstrip("/")
        kept = None if version is None else recall(self._snapshots, root, version)
        if kept is not None:
            return kept
        # the open handle of the latest version, when it is the snapshot asked for (not cached
        # as a snapshot: it moves on)
        current, head = self._latest.get(root), self._appended.get(root)
        if version is None or (current is not None and version > current.version()) or (
                head is not None and version == head.version):
            current = self._current(path)  # (opened, or brought past this process's appends)
        if current is not None and version in (None, current.version()):
            dt = current
        else:
            dt, current = self._table(path, version), None
        proto = dt.protocol()
        features = set(proto.reader_features or []) | set(proto.writer_features or [])
        dvs = 0
        if "deletionVectors" in features:
            dvs = dt.deletion_vectors().read_all().num_rows
        why = unsupported_features(path, features, dt.metadata().configuration, dvs)
        if why:
            raise UnsupportedTableFeature(why)
        if version is not None and dt is not current:  # a past snapshot: kept if local
            made = table_made(root)
            if made is not None:
                keep(self._snapshots, root, version, made, dt)
        return dt

    def exists(self, path: str) -> bool:
        root = local_path(path).rstrip("/")
        if self._head(root, newest=False) is not None:  # a log entry known here: one stat call
            return True
        return DeltaTable.is_deltatable(root)

    def version_or_none(self, path: str) -> int | None:
        head = self._head(local_path(path).rstrip("/"))  # (known here: two stat calls)
        return head.version if head is not None else super().version_or_none(path)

    def version(self, path: str) -> int:
        root = local_path(path).rstrip("/")
        head, dt = self._head(root), self._latest.get(root)
        if head is not None:
            return head.version
        opened = self._opened.get(root, (0, None, 0))
        if dt is not None and opened[1] is not None and opened[1] == table_made(root):
            # the handle's table, written by another process (a recording a follow reads): its
            # newest log entry, without bringing the handle's snapshot up to date
            newest = delta_log.newest_entry(root, max(dt.version(), opened[2]))
            self._opened[root] = (*opened[:2], newest)
            return newest
        dt = self._current(path)
        if dt is None:
            raise StorageError(f"no Delta table at {path}")
        return dt.version()

    def schema(self, path: str, version: int | None = None) -> pa.Schema:
        dt = self._current(path) if version is None else None
        return pa.schema((dt or self._table(path, version)).schema().to_arrow())

    def read(self, path: str, version: int | None = None) -> DataFrame:
        dt = self._readable(path, version)
        schema = from_arrow_schema(pa.schema(dt.schema().to_arrow()))
        uris = _file_paths(dt)
        if not uris:
            return self.spark.createDataFrame([], schema)
        if is_remote(path):  # (the executors read through pyarrow: no hadoop-aws)
            return read_files(self.spark, uris, pa.schema(dt.schema().to_arrow()))
        return self.spark.read.schema(schema).option("basePath", local_path(path)).parquet(*uris)

    def read_positioned(self, path: str, version: int,
                        files: Sequence[str] | None = None) -> DataFrame:
        dt = self._readable(path, version)
        arrow_schema = pa.schema(dt.schema().to_arrow())
        uris = list(files) if files is not None else _file_paths(dt)
        if not uris:
            return self.spark.createDataFrame(
                [], from_arrow_schema(arrow_schema.append(pa.field(FILE_COLUMN, pa.string()))
                                      .append(pa.field(ROW_COLUMN, pa.int64()))))
        if is_remote(path):
            return read_files(self.spark, uris, arrow_schema, positioned=True)
        # Spark's qualified, percent-encoded file paths to our plain ones: one literal map
        pairs = {raw: uri for uri in uris for raw in self._spark_forms(uri)}
        raw = F.create_map(*[F.lit(x) for pair in pairs.items() for x in pair])
        schema = with_arrival(from_arrow_schema(arrow_schema))
        return positioned(self.spark.read.schema(schema).parquet(*uris),
                          F.element_at(raw, F.col("_metadata.file_path")))

    def _spark_forms(self, uri: str) -> set[str]:
        """Forms Spark may report in ``_metadata.file_path`` for the file ``uri``."""
        jvm = self.spark.sparkContext._jvm
        hadoop_path = jvm.org.apache.hadoop.fs.Path(uri)
        fs = hadoop_path.getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration())
        qualified = fs.makeQualified(hadoop_path).toUri().toString()
        return {qualified, re.sub(r"^file:///", "file:/", qualified)}  # local: file:/x

    def read_arrow(self, path: str, version: int | None = None) -> pa.Table:
        dt = self._readable(path, version)
        schema = pa.schema(dt.schema().to_arrow())
        uris = _file_paths(dt)
        if not uris:
            return schema.empty_table()
        return pa.concat_tables(pq.read_table(u, schema=schema) for u in uris)

    def live_files(self, path: str, version: int | None = None) -> list[LiveFile]:
        actions = pa.table(self._readable(path, version).get_add_actions(flatten=True))
        root = local_path(path).rstrip("/")
        return sorted(LiveFile(path=p if p.startswith("/") else f"{root}/{p}", size=size, rows=n)
                      for p, size, n in zip(actions.column("path").to_pylist(),
                                            actions.column("size_bytes").to_pylist(),
                                            actions.column("num_records").to_pylist(),
                                            strict=True))

    def files(self, path: str, version: int) -> list[DataFile]:
        root = local_path(path).rstrip("/")
        files = recall(self._file_lists, root, version)
        if files is None:
            files = self._files(path, version)
            made = table_made(root)
            if made is not None:  # (not a local table, or its first entry is gone: no memo)
                keep(self._file_lists, root, version, made, files)
        return list(files)

    def _files(self, path: str, version: int) -> list[DataFile]:
        dt = self._readable(path, version)
        live = pa.table(dt.get_add_actions(flatten=True))
        counts = dict(zip(live.column("path").to_pylist(), live.column("num_records").to_pylist(),
                          strict=True))
        root = local_path(path).rstrip("/")
        added_in = first_added(root, 0, version)
        if added_in is None or not set(counts) <= set(added_in):
            added_in = {}  # (a log entry is gone or not local: each version's snapshot)
            history = self._table(path, 0)
            for v in range(version + 1):
                if v:
                    history.load_as_version(v)
                for p in pa.table(history.get_add_actions(flatten=True)).column("path"
                                                                                ).to_pylist():
                    added_in.setdefault(p, v)
        entries = [DataFile(uri=p if p.startswith("/") else f"{root}/{p}",
                            commit_version=added_in[p], num_records=counts[p]) for p in counts]
        return sorted(entries, key=lambda f: (f.commit_version, f.uri))

    def write(self, data: pa.Table | DataFrame, path: str, *, mode: WriteMode = "append",
              predicate: str | None = None, txn: Txn | None = None,
              metadata: Mapping[str, str] | None = None) -> WriteResult:
        if self.skip(path, txn):
            return WriteResult(version=None, skipped=True)
        if isinstance(data, DataFrame):
            if predicate is not None:
                data = data.toArrow()  # predicate overwrite goes through delta-rs itself
            else:
                return self._write_spark(data, path, mode=mode, txn=txn, metadata=metadata)
        if isinstance(data, pa.Table):  # delta-rs writes the chunks of a table in an order of
            data = data.combine_chunks()  # its own; the row order is the arrival order
        try:
            write_deltalake(local_path(path), data, mode=mode, predicate=predicate,
                            commit_properties=commit_properties(txn, metadata))
        except DeltaError as exc:
            raise StorageError(f"cannot write to Delta table {path}: {exc}") from exc
        return WriteResult(version=self.version(path))

    def _write_spark(self, df: DataFrame, path: str, *, mode: WriteMode, txn: Txn | None,
                     metadata: Mapping[str, str] | None) -> WriteResult:
        staged = stage_dataframe(df, self.staging_dir(path, uuid.uuid4().hex))  # (names only)
        return self.commit_files(path, staged, to_arrow_schema(df.schema), mode=mode, txn=txn,
                                 metadata=metadata)

    def commits_wait(self, path: str) -> bool:
        """Only on a remote store: a local append is a log entry this process writes (its
        Python work does not run side by side; in threads, a shared run's 32 queries committed
        in 0.22 s instead of 0.09 s)."""
        return is_remote(path)

    def commit_files(self, path: str, files: Sequence[StagedFile], schema: pa.Schema, *,
                     mode: WriteMode = "append", txn: Txn | None = None,
                     metadata: Mapping[str, str] | None = None,
                     remove: Sequence[str] = ()) -> WriteResult:
        root = local_path(path).rstrip("/")
        if mode == "append":
            appended = self._append(root, files, schema, txn, metadata, remove)
            if appended is None and not remove:
                appended = self._make(root, files, schema, txn, metadata)
            if appended is not None:
                return appended
        dt = self._current(path)
        if dt is not None and txn is not None and done_already(
                dt.transaction_version(txn.app_id), txn):
            return WriteResult(version=None, skipped=True)
        now_ms = int(time.time() * 1000)  # file bookkeeping only; never reaches operator output
        actions: list[AddAction | RemoveAction] = [
            AddAction(path=relative_path(f.path, root), size=f.size,
                      partition_values={}, modification_time=now_ms, data_change=True,
                      stats=f.stats or json.dumps({"numRecords": f.num_records}))
            for f in files]
        actions += [RemoveAction(path=relative_path(p, root), data_change=True,
                                 deletion_timestamp=now_ms) for p in remove]
        props = commit_properties(txn, metadata)
        try:
            if dt is not None:
                dt.create_write_transaction(actions, mode=mode, schema=schema,
                                            commit_properties=props)
                dt.update_incremental()
                return WriteResult(version=dt.version())
            made = Schema.from_arrow(schema)
            create_table_with_add_actions(root, made, actions, mode="error",
                                          commit_properties=props)
        except DeltaError as exc:
            raise StorageError(f"cannot commit {len(files)} files to Delta table {path}: {exc}"
                               ) from exc
        if not remove:  # (made with the default protocol, no partitions, no properties)
            self._appended[root] = Appends(0, {txn.app_id: txn.version} if txn else {},
                                            made.to_json())
        return WriteResult(version=0)

    def _head(self, root: str, newest: bool = True) -> Appends | None:
        """The latest version of the table at ``root`` and the app transactions known beyond its
        open handle (see :class:`Appends`), when its latest commits are this process's (no
        other writer since, table not made again); else None. ``newest=False``: without
        checking for a later entry (an entry put only if absent is refused then anyway)."""
        dt = self._latest.get(root)
        head = self._appended.get(root)
        if dt is not None and (head is None or head.version < dt.version()):
            head = Appends(dt.version(), {})  # (the handle read the appends since)
        if head is None or not entry_exists(root, head.version):
            return None
        return None if newest and entry_exists(root, head.version + 1) else head

    def _append(self, root: str, files: Sequence[StagedFile], schema: pa.Schema,
                txn: Txn | None, metadata: Mapping[str, str] | None, remove: Sequence[str] = ()
                ) -> WriteResult | None:
        """Append ``files`` (and remove the files ``remove``) as the next log entry of the table
        at ``root``, written here (see the module docstring); None when delta-rs has to make
        this commit (another writer took the version too)."""
        head = self._head(root, newest=False)
        if head is None:
            return None
        dt = self._latest.get(root) if head.made is None else None
        if txn is not None:
            done = head.txns.get(txn.app_id)
            if done is None and dt is not None:
                done = dt.transaction_version(txn.app_id)
            if done_already(done, txn):
                return WriteResult(version=None, skipped=True)
        paths = [relative_path(f.path, root) for f in files]
        removed = [relative_path(p, root) for p in remove]
        plain = (head.made == Schema.from_arrow(schema).to_json() if dt is None
                 else appends_plainly(dt, schema, bool(removed)))
        interval = checkpoint_interval(dt) if dt is not None else CHECKPOINT_INTERVAL
        if not plain or not all(PLAIN_PATH.fullmatch(p) for p in [*paths, *removed]) or (
                (head.version + 2) % interval == 0):
            return None
        version = head.version + 1
        now_ms = int(time.time() * 1000)  # file bookkeeping only; never reaches operator output
        info = commit_info("WRITE", {"mode": "Append", "partitionBy": "[]"}, metadata, now_ms)
        lines = [info, *change_actions(paths, files, removed, txn, now_ms)]
        if not create_entry(f"{log_dir(root)}/{version:020d}.json", entry_text(lines)):
            return None  # another writer took the version: delta-rs sorts it out
        txns = {**head.txns, txn.app_id: txn.version} if txn is not None else head.txns
        self._appended[root] = Appends(version, txns, head.made)
        return WriteResult(version=version)

    def _make(self, root: str, files: Sequence[StagedFile], schema: pa.Schema,
              txn: Txn | None, metadata: Mapping[str, str] | None) -> WriteResult | None:
        """Make a table at ``root`` with ``files`` as its version 0, written here as delta-rs's
        ``create_table_with_add_actions`` writes it (default protocol, no partitions, no
        properties); None when delta-rs has to (a table or a log entry is there already, a
        path to encode)."""
        paths = [relative_path(f.path, root) for f in files]
        first = f"{log_dir(root)}/{0:020d}.json"
        if not all(PLAIN_PATH.fullmatch(p) for p in paths) or not no_log(root):
            return None
        made = Schema.from_arrow(schema).to_json()
        now_ms = int(time.time() * 1000)  # file bookkeeping only; never reaches operator output
        lines = table_entry(root, made, paths, files, txn, metadata, now_ms)
        if not is_remote(root):
            os.makedirs(os.path.dirname(first), exist_ok=True)
        if not create_entry(first, entry_text(lines)):
            return None  # another writer made the table: delta-rs sorts it out
        self._appended[root] = Appends(0, {txn.app_id: txn.version} if txn else {}, made)
        return WriteResult(version=0)

    def checkpoint(self, path: str, every: int) -> bool:
        latest = self.version_or_none(path)  # (without bringing a handle up to date)
        if latest is None:
            return False
        since = last_checkpoint(path)
        if latest - (-1 if since is None else since) < every:
            return False
        try:  # (a handle of its own, not the open one this process commits and reads through:
            # a lifecycle checkpoints a finished run's tables in a thread while it works on others)
            self._table(path).create_checkpoint()
        except DeltaError as exc:
            raise StorageError(f"cannot write a checkpoint of Delta table {path}: {exc}") from exc
        # A handle brought up to date commit by commit gets slower with each version it has
        # read since it was opened (delta-rs 1.6: about 0.1 ms more per commit and version);
        # opened again (when next used), it starts from the checkpoint.
        self._latest.pop(local_path(path).rstrip("/"), None)
        self._opened.pop(local_path(path).rstrip("/"), None)
        return True

    def txn_version(self, path: str, app_id: str) -> int | None:
        head = self._head(local_path(path).rstrip("/"))  # (known without a handle: no log replay)
        if head is not None and (app_id in head.txns or head.made is not None):
            return head.txns.get(app_id)
        return (self._current(path) or self._table(path)).transaction_version(app_id)

    def history(self, path: str, limit: int | None = None) -> list[dict]:
        if limit is not None and not is_remote(path) and (  # (delta-rs reads every log entry)
                recent := delta_log.recent_commits(path, self.version(path), limit)) is not None:
            return recent
        return (self._current(path) or self._table(path)).history(limit)

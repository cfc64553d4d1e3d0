"""Delta through the native delta-spark connector (needs the Delta jars on the classpath)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from jobs.storage.base import (
    FILE_COLUMN,
    ROW_COLUMN,
    DataFile,
    DeltaStorage,
    LiveFile,
    StagedFile,
    StorageError,
    Txn,
    WriteMode,
    WriteResult,
    positioned,
    unsupported_features,
    with_arrival,
)
from jobs.storage.delta_log import (
    LoggedState,
    entry_exists,
    last_checkpoint,
    logged_state,
    newest_entry,
    recent_commits,
)
from jobs.storage.delta_log import txn_version as logged_txn_version
from jobs.storage.delta_transaction import commit_staged
from jobs.storage.staging import stage_table


def local_file_path():
    """Spark's ``_metadata.file_path`` as a plain local path (``file:/a%20b`` -> ``/a b``)."""
    # The column is percent-encoded; url_decode also reads '+' as ' ', so protect '+' first.
    path = F.regexp_replace(F.col("_metadata.file_path"), "^file:(//)?", "")
    return F.url_decode(F.regexp_replace(path, r"\+", "%2B"))


def _plain(uri: str) -> str:
    return re.sub(r"^file:(//)?", "", uri)


def _input_path(uri: str) -> str:
    """A plain local path from ``DataFrame.inputFiles()`` (percent-encoded URIs)."""
    return unquote(_plain(uri))


def _logged(path: str, version: int) -> LoggedState | None:
    """The state at ``version`` of the table at ``path`` from its log entries, its live files
    by local path (None when an entry is missing). A snapshot's ``inputFiles`` or a read
    would reconstruct the table's state with a Spark job at every call."""
    state = logged_state(path, version)
    if state is None:
        return None
    root = _plain(path).rstrip("/")
    return dataclasses.replace(state, live={(p if p.startswith("/") else f"{root}/{p}"): add
                                            for p, add in state.live.items()})


def _logged_live(path: str, version: int) -> dict[str, dict] | None:
    """The ``add`` actions of the data files live at ``version``, by local path (see
    :func:`_logged`)."""
    state = _logged(path, version)
    return None if state is None else state.live


def _logged_schema(state: LoggedState | None) -> pa.Schema | None:
    """The table schema ``state`` records, as Arrow types, when the table's rows are those of
    its live Parquet files as they are (None otherwise: deletion vectors in use, column
    mapping, nanosecond timestamps, partition columns, or no schema)."""
    text = None if state is None else state.metadata.get("schemaString")
    if text is None or state.metadata.get("partitionColumns") or unsupported_features(
            "", set(state.protocol.get("readerFeatures") or ()),
            state.metadata.get("configuration") or {},
            sum(1 for add in state.live.values() if add.get("deletionVector"))):
        return None
    return to_arrow_schema(StructType.fromJson(json.loads(text)))


def _logged_rows(path: str, add: dict) -> int:
    """The row count the ``add`` action of the data file at ``path`` records in its statistics
    (without them: the file's footer)."""
    import pyarrow.parquet as pq

    stats = json.loads(add.get("stats") or "{}")
    if stats.get("numRecords") is None:
        return pq.ParquetFile(path).metadata.num_rows
    return int(stats["numRecords"])


@dataclass
class DeltaSparkStorage(DeltaStorage):
    """Native backend: ``format("delta")`` reads and DataFrame writes (Delta's own
    txnAppId/txnVersion); staged files are committed as they are through Delta's transaction
    (:mod:`jobs.storage.delta_transaction`)."""

    name: str = field(init=False, default="delta-spark")

    def _api(self, path: str):
        from delta.tables import DeltaTable

        return DeltaTable.forPath(self.spark, path)

    def _reader(self, version: int | None):
        reader = self.spark.read.format("delta")
        return reader if version is None else reader.option("versionAsOf", version)

    def exists(self, path: str) -> bool:
        # (as newest_entry finds a version: no listing of the log, no JVM call, and no walk
        # through the entries after the last checkpoint)
        return last_checkpoint(path) is not None or entry_exists(path, 0)

    def version(self, path: str) -> int:
        latest = newest_entry(path)  # (no listing of the log, no Spark job)
        if latest is None:
            raise StorageError(f"no Delta table at {path}")
        return latest

    def schema(self, path: str, version: int | None = None) -> pa.Schema:
        schema = _logged_schema(_logged(path, self.version(path) if version is None
                                        else version))
        return to_arrow_schema(self._reader(version).load(path).schema) if schema is None \
            else schema

    def read(self, path: str, version: int | None = None) -> DataFrame:
        return self._reader(version).load(path)

    def read_positioned(self, path: str, version: int,
                        files: Sequence[str] | None = None) -> DataFrame:
        # Delta's reader gives no ``_metadata.row_index``: the snapshot's Parquet files are read
        # as Parquet (the tables Reprise writes have no deletion vectors; see DELTA_CONF)
        state = _logged(path, version)
        if _logged_schema(state) is not None:  # (the log names the files: no Spark job)
            schema = StructType.fromJson(json.loads(state.metadata["schemaString"]))
            paths = sorted(state.live) if files is None else list(files)
            if not paths:
                return self.spark.createDataFrame([], schema).select(
                    "*", F.lit("").alias(FILE_COLUMN), F.lit(0).cast("long").alias(ROW_COLUMN))
            return positioned(self.spark.read.schema(with_arrival(schema))
                              .option("basePath", path).parquet(*paths), local_file_path())
        snapshot = self.read(path, version)
        paths = (sorted(_input_path(u) for u in snapshot.inputFiles()) if files is None
                 else list(files))
        if not paths:
            return snapshot.limit(0).select("*", F.lit("").alias(FILE_COLUMN),
                                            F.lit(0).cast("long").alias(ROW_COLUMN))
        return positioned(self.spark.read.schema(with_arrival(snapshot.schema))
                          .option("basePath", path).parquet(*paths), local_file_path())

    def read_arrow(self, path: str, version: int | None = None) -> pa.Table:
        # The live files named by the log, read with pyarrow in the table's schema, as the
        # delta-rs backend does (the tables Reprise reads have no deletion vectors or column
        # mapping); a Spark read (a Spark job or two) only when a log entry is gone.
        import pyarrow.parquet as pq

        state = _logged(path, self.version(path) if version is None else version)
        schema = _logged_schema(state)
        if schema is None:
            return self.read(path, version).toArrow()
        if not state.live:
            return schema.empty_table()
        return pa.concat_tables(pq.read_table(p, schema=schema) for p in sorted(state.live))

    def live_files(self, path: str, version: int | None = None) -> list[LiveFile]:
        import os

        import pyarrow.parquet as pq

        logged = _logged_live(path, self.version(path) if version is None else version)
        if logged is not None:
            return sorted(LiveFile(path=p, size=int(add["size"]), rows=_logged_rows(p, add))
                          for p, add in logged.items())
        paths = sorted(_input_path(u) for u in self.read(path, version).inputFiles())
        return [LiveFile(path=p, size=os.path.getsize(p),
                         rows=pq.ParquetFile(p).metadata.num_rows) for p in paths]

    def files(self, path: str, version: int) -> list[DataFile]:
        logged = _logged_live(path, version)
        live = (set(logged) if logged is not None
                else {_input_path(u) for u in self.read(path, version).inputFiles()})
        added_in = self.files_added_in(path, 0, version)  # (the log entries, while all are kept)
        if added_in is None or not live <= set(added_in):
            added_in = {}  # (an entry is gone: each version's snapshot)
            for v in range(version + 1):
                for uri in sorted(self.read(path, v).inputFiles()):
                    added_in.setdefault(_input_path(uri), v)
        return sorted((DataFile(uri=u, commit_version=added_in[u]) for u in live),
                      key=lambda f: (f.commit_version, f.uri))

    def write(self, data: pa.Table | DataFrame, path: str, *, mode: WriteMode = "append",
              predicate: str | None = None, txn: Txn | None = None,
              metadata: Mapping[str, str] | None = None) -> WriteResult:
        if self.skip(path, txn):
            return WriteResult(version=None, skipped=True)
        if isinstance(data, pa.Table) and predicate is None:
            return self._write_arrow(data, path, mode=mode, txn=txn, metadata=metadata)
        # (an Arrow table from the driver is small: one file, in its row order, the arrival order)
        df = data if isinstance(data, DataFrame) else self.spark.createDataFrame(data).coalesce(1)
        writer = df.write.format("delta").mode(mode)
        if predicate is not None:
            writer = writer.option("replaceWhere", predicate)
        if txn is not None:
            writer = writer.option("txnAppId", txn.app_id).option("txnVersion", txn.version)
        if metadata:
            writer = writer.option("userMetadata", json.dumps(dict(metadata)))
        writer.save(path)
        return WriteResult(version=self.version(path))

    def _write_arrow(self, table: pa.Table, path: str, *, mode: WriteMode, txn: Txn | None,
                     metadata: Mapping[str, str] | None) -> WriteResult:
        """An Arrow table from the driver (small) staged as one Parquet file in its row order
        (the arrival order) and committed through Delta's transaction: no Spark job. Its
        timestamps are stored in microseconds, as Spark's writer stores them."""
        table = table.cast(pa.schema([f.with_type(pa.timestamp("us", f.type.tz))
                                      if pa.types.is_timestamp(f.type) else f
                                      for f in table.schema]), safe=False)
        result = self.commit_files(path, [stage_table(self, path, table)], table.schema,
                                   mode=mode, txn=txn, metadata=metadata)
        return result if result.skipped else WriteResult(version=result.version)

    def commit_files(self, path: str, files: Sequence[StagedFile], schema: pa.Schema, *,
                     mode: WriteMode = "append", txn: Txn | None = None,
                     metadata: Mapping[str, str] | None = None,
                     remove: Sequence[str] = ()) -> WriteResult:
        version = commit_staged(self.spark, path, files, from_arrow_schema(schema), mode=mode,
                                txn=txn, metadata=metadata, remove=remove)
        return WriteResult(version=None, skipped=True) if version is None else WriteResult(
            version=version)

    def txn_version(self, path: str, app_id: str) -> int | None:
        # (Delta keeps the last version per appId in the snapshot; the log has every one)
        return logged_txn_version(path, app_id)

    def history(self, path: str, limit: int | None = None) -> list[dict]:
        # From the log entries, whole: Delta's history keeps only the commit fields Delta
        # writes, and drops the metadata delta-rs lays out beside them (a commit of a run the
        # other backend began), which finding a batch's commit needs (see commit_metadata).
        latest = self.version(path)
        logged = recent_commits(path, latest, latest + 1 if limit is None else limit)
        if logged is not None:
            return logged
        api = self._api(path)  # (an entry is gone, e.g. after a log clean-up)
        rows = (api.history() if limit is None else api.history(limit)).collect()
        return [r.asDict(recursive=True) for r in rows]

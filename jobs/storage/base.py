"""One storage interface over Delta tables, with two interchangeable backends."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from engine.errors import RepriseError
from jobs.storage.delta_log import LoggedCommit, added_in, changes, logged_commits
from jobs.storage.locations import filesystem

WriteMode = Literal["append", "overwrite"]

#: Column names added by :meth:`DeltaStorage.read_positioned`.
FILE_COLUMN = "__file"
ROW_COLUMN = "__row"
#: Columns a data file of a recording in the key-hash layout holds besides the table's (not in
#: the Delta schema, so readers of the table never see them): each row's position in the file's
#: arrival order, and the 64-bit hash of its key (see :mod:`jobs.recordings.layout`).
ARRIVAL_COLUMN = "__arrival"
KEY_HASH_COLUMN = "__key_hash"
LAYOUT_COLUMNS = (ARRIVAL_COLUMN, KEY_HASH_COLUMN)
#: The Parquet footer key naming the column whose hash orders a file in the layout.
LAYOUT_KEY = "reprise.layout.key"


class StorageError(RepriseError):
    """A Delta table cannot be read or written as asked; the message names the table."""


class UnsupportedTableFeature(StorageError):
    """The table uses a Delta feature this backend cannot read correctly."""


@dataclass(frozen=True)
class DataFile:
    """A live data file of a snapshot, with the commit version that added it."""

    uri: str
    commit_version: int
    num_records: int | None = None


@dataclass(frozen=True, order=True)
class LiveFile:
    """A live data file: local path (or URI), size in bytes and row count."""

    path: str
    size: int
    rows: int


@dataclass(frozen=True)
class StagedFile:
    """A Parquet file already written inside a table directory, waiting to be committed."""

    path: str  # absolute path
    size: int
    num_records: int
    stats: str = ""  # Delta stats JSON


@dataclass(frozen=True)
class WriteResult:
    """Outcome of a write: the new table version, or ``skipped`` when the transaction was done."""

    version: int | None
    skipped: bool = False


@dataclass(frozen=True)
class Txn:
    """A Delta application transaction: the write happens at most once per (app_id, version)."""

    app_id: str
    version: int


@dataclass
class DeltaStorage(ABC):
    """Read and write Delta tables for Spark jobs and the driver."""

    spark: SparkSession
    name: str = field(init=False, default="abstract")

    @abstractmethod
    def exists(self, path: str) -> bool:
        """True when ``path`` holds a Delta table."""

    @abstractmethod
    def version(self, path: str) -> int:
        """Latest version of the table."""

    def version_or_none(self, path: str) -> int | None:
        """The latest version of the table at ``path``, None when there is none."""
        return self.version(path) if self.exists(path) else None

    @abstractmethod
    def schema(self, path: str, version: int | None = None) -> pa.Schema:
        """Arrow schema of the table at ``version`` (latest when None)."""

    @abstractmethod
    def read(self, path: str, version: int | None = None) -> DataFrame:
        """The table's rows at ``version`` as a Spark DataFrame."""

    @abstractmethod
    def read_positioned(self, path: str, version: int,
                        files: Sequence[str] | None = None) -> DataFrame:
        """Rows with their position: ``__file`` (data file URI) and ``__row`` (row in the file's
        arrival order: see :func:`positioned`).

        ``files`` restricts the read to those data files of the snapshot.
        """

    @abstractmethod
    def read_arrow(self, path: str, version: int | None = None) -> pa.Table:
        """The table at ``version`` as an Arrow table on the driver (small tables only)."""

    @abstractmethod
    def live_files(self, path: str, version: int | None = None) -> list[LiveFile]:
        """The live data files at ``version`` (latest when None), ordered by path."""

    @abstractmethod
    def files(self, path: str, version: int) -> list[DataFile]:
        """Live data files at ``version``, ordered by (commit version, URI)."""

    @abstractmethod
    def write(self, data: pa.Table | DataFrame, path: str, *, mode: WriteMode = "append",
              predicate: str | None = None, txn: Txn | None = None,
              metadata: Mapping[str, str] | None = None) -> WriteResult:
        """Append or overwrite (optionally only the rows matching ``predicate``)."""

    @abstractmethod
    def commit_files(self, path: str, files: Sequence[StagedFile], schema: pa.Schema, *,
                     mode: WriteMode = "append", txn: Txn | None = None,
                     metadata: Mapping[str, str] | None = None,
                     remove: Sequence[str] = ()) -> WriteResult:
        """Commit Parquet files that workers wrote under ``path`` (see :meth:`staging_dir`).

        ``remove`` lists live files (paths from :meth:`live_files`) that the same commit drops.
        """

    @abstractmethod
    def txn_version(self, path: str, app_id: str) -> int | None:
        """Last committed version of the application transaction ``app_id``, if any."""

    @abstractmethod
    def history(self, path: str, limit: int | None = None) -> list[dict]:
        """Commit history, newest first, each with at least ``version`` and ``operation``
        and every field of the commit's ``commitInfo`` (the newest ``limit`` commits only,
        when given)."""

    def commit_metadata(self, entry: dict) -> dict[str, str]:
        """The metadata given to the commit behind a :meth:`history` entry, whichever backend
        made the commit: delta-spark keeps it as a JSON object in ``userMetadata``, delta-rs
        lays it out beside the commit's own fields (a run one backend began and the other
        resumes or continues finds its batches' commits by it)."""
        return {**{k: v for k, v in entry.items() if isinstance(v, str)},
                **user_metadata(entry.get("userMetadata"))}

    def files_added_in(self, path: str, first: int, last: int) -> dict[str, int] | None:
        """The version of ``first .. last`` whose commit added each data file of the table at
        ``path`` (a local path or URI; files named as :meth:`live_files` names them), from those
        versions' log entries only; None when one of them is missing."""
        return added_in(path, first, last)

    def commits(self, path: str, first: int, last: int) -> list[LoggedCommit] | None:
        """Each commit of versions ``first .. last`` of the table at ``path``, in order: its
        :meth:`history` entry (``info``), the data files it adds (with their row counts, None
        when its stats lack one) and those it removes (with whether it removes their rows, not
        when it only rearranges them), named as :meth:`live_files` names them, from those
        versions' log entries only, each read once; None when one of them is missing."""
        return logged_commits(path, first, last)

    def files_changed(self, path: str, version: int, latest: int
                      ) -> tuple[set[str], set[str]] | None:
        """The data files the commits of versions ``version+1 .. latest`` of the table at
        ``path`` add and remove (named as :meth:`live_files` names them), from those versions'
        log entries only; None when one of them is missing."""
        return changes(path, version, latest)

    def file_rows(self, uri: str) -> int:
        """The row count of the data file ``uri`` (from its Parquet footer)."""
        fs, inner = filesystem(uri)
        with fs.open_input_file(inner) as handle:
            return pq.ParquetFile(handle).metadata.num_rows

    def read_file(self, uri: str, columns: Sequence[str] | None = None,
                  schema: pa.Schema | None = None) -> pa.Table:
        """The rows of the data file ``uri`` (its ``columns`` only, when given; read as
        ``schema``, the table's, when given)."""
        fs, inner = filesystem(uri)
        return pq.read_table(inner, filesystem=fs, schema=schema,
                             columns=None if columns is None else list(columns))

    def checkpoint(self, path: str, every: int) -> bool:
        """Write a checkpoint of the table's latest version when its log has at least ``every``
        commits after the last checkpoint (opening the table then replays at most that many
        log entries); True when one was written (False when there is no table). The default
        does nothing (Delta Lake on Spark writes checkpoints by itself)."""
        return False

    def version_with(self, path: str, metadata: Mapping[str, str]) -> int | None:
        """Newest version whose commit was given all of ``metadata`` (None when none was)."""
        for entry in self.history(path):
            if metadata.items() <= self.commit_metadata(entry).items():
                return int(entry["version"])
        return None

    def commits_wait(self, path: str) -> bool:
        """Whether a commit to the table at ``path`` spends its time waiting (on the JVM, on a
        remote store), so that commits to several tables are faster side by side in threads.
        The default: yes."""
        return True

    def staging_dir(self, path: str, tag: str) -> str:
        """Directory where workers may write Parquet files for :meth:`commit_files`."""
        return f"{path.rstrip('/')}/data/{tag}"

    def skip(self, path: str, txn: Txn | None) -> bool:
        """True when ``txn`` is already committed on ``path``."""
        if txn is None or not self.exists(path):
            return False
        return done_already(self.txn_version(path, txn.app_id), txn)


def with_arrival(schema: StructType) -> StructType:
    """A table's Spark schema with :data:`ARRIVAL_COLUMN`, to read its Parquet files with
    (null in a file without it)."""
    return StructType([*schema.fields, StructField(ARRIVAL_COLUMN, LongType(), True)])


def positioned(df: DataFrame, file: Column) -> DataFrame:
    """``df`` (Parquet files read with :func:`with_arrival`) with :data:`FILE_COLUMN` (``file``)
    and :data:`ROW_COLUMN`: each row's position in its file's arrival order (its
    :data:`ARRIVAL_COLUMN` where the file stores its rows in another order, else its index)."""
    return df.select(*(df[c] for c in df.columns if c != ARRIVAL_COLUMN), file.alias(FILE_COLUMN),
                     F.coalesce(F.col(ARRIVAL_COLUMN), F.col("_metadata.row_index"))
                     .alias(ROW_COLUMN))


def user_metadata(text: object) -> dict[str, str]:
    """The commit metadata a ``userMetadata`` field holds as a JSON object (none when it holds
    anything else: another writer's free text)."""
    if not isinstance(text, str):
        return {}
    try:
        held = json.loads(text)
    except ValueError:
        return {}
    return {k: v for k, v in held.items() if isinstance(v, str)} if isinstance(held, dict) else {}


def done_already(committed: int | None, txn: Txn | None) -> bool:
    """True when an application transaction at ``committed`` covers ``txn``."""
    return txn is not None and committed is not None and committed >= txn.version


def unsupported_features(path: str, reader_features: set[str], configuration: Mapping[str, str],
                         deletion_vectors_in_use: int) -> str | None:
    """Why a snapshot cannot be read through its Parquet files, or None when it can."""
    problems = []
    if deletion_vectors_in_use:
        problems.append(f"deletion vectors in use ({deletion_vectors_in_use} files have rows "
                        "deleted by a deletion vector; reading the Parquet files would "
                        "resurrect those rows)")
    mode = configuration.get("delta.columnMapping.mode") or "none"
    if mode != "none" or "columnMapping" in reader_features:
        problems.append(f"column mapping (mode {mode!r}; physical column names differ from "
                        "the logical ones)")
    if "timestampNanos" in reader_features:
        problems.append("nanosecond timestamps (timestampNanos)")
    if not problems:
        return None
    return (f"Delta table {path} uses " + "; ".join(problems) + ". The delta-rs backend refuses "
            "to read it rather than return wrong rows: rewrite the table without these features "
            "(e.g. REORG ... APPLY (PURGE), disable column mapping) or use the delta-spark backend "
            "(REPRISE_DELTA_JARS).")

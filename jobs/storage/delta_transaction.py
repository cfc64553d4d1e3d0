"""A commit of files already written under a table, through Delta Lake's own optimistic
transaction on the JVM (``DeltaLog.forTable(...).startTransaction()`` and ``commit``, reached
through py4j): the files keep their paths and names, and no Spark job runs.

The actions are Delta's own classes, made from their JSON form (``Action.fromJson``), so the
log entry holds what Delta writes for them. The operation is Delta's ``WRITE`` (its mode, and the
commit metadata as its ``userMetadata``). The files a commit removes are named with their sizes,
so that Delta brings the table's checksum (``.crc``) up to date from the commit alone (without
them it reconstructs the table's state with a Spark job after the commit).

The application transaction is checked in the transaction's snapshot without Delta's
``txnVersion``, which reconstructs the snapshot's whole state with a Spark job: from the
snapshot's checksum, which Delta keeps the application transactions in, or, when it has none,
from the log (:mod:`jobs.storage.delta_log`). The transaction is then marked as having read the
whole table, so a commit another writer makes after its snapshot makes this one fail (Delta's
conflict check) rather than commit a transaction twice.

The classes used are those of the pinned Delta release (``jobs/runtime/delta_jars.py``).
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from urllib.parse import quote

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from jobs.storage.base import StagedFile, StorageError, Txn, WriteMode
from jobs.storage.delta_log import txn_version as logged_txn_version
from jobs.storage.locations import filesystem
from jobs.storage.log_entries import relative_path

#: The arguments of Delta's ``DeltaOperations.Write`` after (mode, partitionBy, predicate,
#: userMetadata), which keep their defaults (Delta 4.4 has five of them).
WRITE_DEFAULTS = range(5, 10)
#: Delta's package on the JVM.
DELTA = "org.apache.spark.sql.delta"
#: Scala's converters between Java and Scala collections.
CONVERTERS = "scala.jdk.javaapi.CollectionConverters"


@functools.lru_cache(maxsize=32)
def _resolved(jvm, name: str):
    """The JVM class, static member or Scala object (``Name$.MODULE$``) at the dotted ``name``,
    looked up once per gateway (``jvm``): through py4j, each step of a name is a round trip to
    the JVM, and a commit would otherwise make some sixty of them."""
    holder = jvm
    for part in name.split("."):
        holder = getattr(holder, part)
    return holder


def _jvm_member(spark: SparkSession, name: str):
    """:func:`_resolved` for the session's gateway."""
    return _resolved(spark._jvm, name)


@functools.lru_cache(maxsize=4)
def _write_defaults(jvm) -> tuple:
    """The default values of ``DeltaOperations.Write``'s arguments :data:`WRITE_DEFAULTS`."""
    write = _resolved(jvm, f"{DELTA}.DeltaOperations.Write$.MODULE$")
    return tuple(getattr(write, f"apply$default${i}")() for i in WRITE_DEFAULTS)


def logged_path(path: str, root: str) -> str:
    """A data file's path as a Delta log names it: relative to the table's root and
    percent-encoded (a URI reference)."""
    return quote(relative_path(path, root), safe="/")


def committed_txn(spark: SparkSession, transaction, path: str, app_id: str) -> int | None:
    """The version of the application transaction ``app_id`` in ``transaction``'s snapshot
    (from its checksum), else the newest the table's log records; None when there is none."""
    checksum = transaction.snapshot().checksumOpt()
    if checksum.isDefined():
        known = checksum.get().setTransactions()
        if known.isDefined():
            seen = _jvm_member(spark, CONVERTERS).asJava(known.get())
            return next((int(t.version()) for t in seen if t.appId() == app_id), None)
    return logged_txn_version(path, app_id)


def _seq(spark: SparkSession, items: list):
    """A Scala immutable Seq of the JVM objects ``items``."""
    listed = _jvm_member(spark, "java.util.ArrayList")()
    for item in items:
        listed.add(item)
    return _jvm_member(spark, CONVERTERS).asScala(listed).toList()


def _module(spark: SparkSession, name: str):
    """The Scala object ``name`` of Delta's package (e.g. ``actions.Action``; a nested object
    as ``DeltaOperations.Write``)."""
    return _jvm_member(spark, f"{DELTA}.{name}$.MODULE$")


def _operation(spark: SparkSession, mode: WriteMode, metadata: Mapping[str, str] | None):
    """Delta's ``WRITE`` operation in ``mode``, with ``metadata`` as its user metadata."""
    write = _module(spark, "DeltaOperations.Write")
    save_mode = _jvm_member(spark, "org.apache.spark.sql.SaveMode").valueOf(mode.capitalize())
    option = _jvm_member(spark, "scala.Option")
    nothing = option.empty()
    user = option.apply(json.dumps(dict(metadata))) if metadata else nothing
    return write.apply(save_mode, nothing, nothing, user, *_write_defaults(spark._jvm))


def _new_table_metadata(spark: SparkSession, schema: StructType, now_ms: int):
    """The metadata action of a new table of ``schema`` (no partitions; Delta adds its session
    defaults, e.g. deletion vectors off, when the transaction takes it)."""
    meta = {"id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
            "schemaString": schema.json(), "partitionColumns": [], "configuration": {},
            "createdTime": now_ms}
    return _module(spark, "actions.Action").fromJson(json.dumps({"metaData": meta}))


def _sizes(paths: Sequence[str]) -> list[int]:
    """The sizes in bytes of the files at ``paths`` (local paths or URIs)."""
    if not paths:
        return []
    fs, _ = filesystem(paths[0])
    return [info.size for info in fs.get_file_info([filesystem(p)[1] for p in paths])]


def _check_schema(path: str, transaction, schema: StructType) -> None:
    """StorageError when the table's columns and types are not those of ``schema``."""
    table = StructType.fromJson(json.loads(transaction.metadata().schemaString()))
    if table.simpleString() != schema.simpleString():
        raise StorageError(f"cannot commit files to Delta table {path}: their schema "
                           f"{schema.simpleString()} is not the table's {table.simpleString()}")


def commit_staged(spark: SparkSession, path: str, files: Sequence[StagedFile],
                  schema: StructType, *, mode: WriteMode, txn: Txn | None,
                  metadata: Mapping[str, str] | None, remove: Sequence[str]) -> int | None:
    """Commit ``files`` (written under the table at ``path``) as they are, dropping the live
    files ``remove`` (all live files in ``overwrite`` mode), recording ``txn``, in one Delta
    transaction; the new version, or None when ``txn`` was committed already."""
    try:
        return _commit(spark, path, files, schema, mode=mode, txn=txn, metadata=metadata,
                       remove=remove)
    except Py4JJavaError as exc:
        why = str(exc.java_exception.getMessage()).splitlines()[0]
        raise StorageError(f"cannot commit {len(files)} files to Delta table {path}: {why}"
                           ) from exc


def _commit(spark: SparkSession, path: str, files: Sequence[StagedFile], schema: StructType, *,
            mode: WriteMode, txn: Txn | None, metadata: Mapping[str, str] | None,
            remove: Sequence[str]) -> int | None:
    delta_log = _jvm_member(spark, f"{DELTA}.DeltaLog")
    transaction = delta_log.forTable(spark._jsparkSession, path).startTransaction()
    now_ms = int(time.time() * 1000)  # file bookkeeping only; never reaches operator output
    action = _module(spark, "actions.Action")
    root = path.rstrip("/")
    actions = []
    if transaction.readVersion() < 0:
        transaction.updateMetadataForNewTable(_new_table_metadata(spark, schema, now_ms))
    else:
        if txn is not None:
            done = committed_txn(spark, transaction, path, txn.app_id)
            if done is not None and done >= txn.version:
                return None
            transaction.readWholeTable()  # (a concurrent commit makes this one fail)
        _check_schema(path, transaction, schema)
        if mode == "overwrite":
            live = _jvm_member(spark, CONVERTERS).asJava(transaction.filterFiles())
            actions += [f.remove() for f in live]
    actions += [action.fromJson(json.dumps({"add": {
        "path": logged_path(f.path, root), "partitionValues": {}, "size": f.size,
        "modificationTime": now_ms, "dataChange": True,
        "stats": f.stats or json.dumps({"numRecords": f.num_records})}})) for f in files]
    # (with their sizes: Delta then keeps the table's checksum without a Spark job)
    dropped = list(remove) if mode == "append" else []
    actions += [action.fromJson(json.dumps({"remove": {
        "path": logged_path(p, root), "deletionTimestamp": now_ms, "dataChange": True,
        "extendedFileMetadata": True, "partitionValues": {}, "size": size, "tags": {}}}))
        for p, size in zip(dropped, _sizes(dropped), strict=True)]
    if txn is not None:
        actions.append(action.fromJson(json.dumps(
            {"txn": {"appId": txn.app_id, "version": txn.version, "lastUpdated": now_ms}})))
    return int(transaction.commit(_seq(spark, actions), _operation(spark, mode, metadata)))

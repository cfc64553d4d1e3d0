"""The Parquet files the workers write straight into a run's tables (output, late, quarantine,
state), the rows describing them that the driver collects, and the bucket a state file holds."""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import TaskContext

from engine.operator import SEQ, column_to_arrow
from jobs.execution.key_codes import KeyValues
from jobs.execution.step_plan import KINDS, StepFiles, StepPlan
from jobs.storage import StagedFile, file_stats
from jobs.storage.locations import filesystem, is_remote

FILES_SCHEMA = ("batch long, kind string, bucket long, path string, size long, rows long, "
                "stats string")


_COLUMNS = ["batch", "kind", "bucket", "path", "size", "rows", "stats"]


_FILES_ARROW = pa.schema([(c, pa.string() if c in ("kind", "path", "stats") else pa.int64())
                          for c in _COLUMNS])


_BUCKET_FILE = re.compile(r"part-b(\d+|all)(?:_(\d+))?-")


def part_name(group: range, buckets: int) -> str:
    """How a worker's file names the buckets it holds (see :func:`buckets_of_file`)."""
    if group == range(buckets):
        return "all"
    return f"{group[0]:05d}" if len(group) == 1 else f"{group[0]:05d}_{group[-1]:05d}"


def buckets_of_file(path: str, buckets: int) -> range:
    """The buckets (of a run's ``buckets``) whose state a state file holds, as its name says
    (:func:`part_path`): one bucket (``part-b00003-``), a group of consecutive buckets that
    one task stepped as one (``part-b00004_00007-``) or every bucket (``part-ball-``)."""
    m = _BUCKET_FILE.search(path.rsplit("/", 1)[-1])
    if not m:
        raise ValueError(f"state file {path} does not carry a bucket number")
    if m.group(1) == "all":
        return range(buckets)
    first = int(m.group(1))
    return range(first, int(m.group(2) or first) + 1)


#: The late and quarantine tables' column of an event's arrival sequence (``SEQ`` in a batch).
ARRIVAL = "arrival_seq"


def arrow_table(frame: pd.DataFrame, schema: pa.Schema, keys: KeyValues | None = None,
                names: Mapping[str, str] | None = None, dictionary: bool = False) -> pa.Table:
    """``frame`` (non-empty) as a table of ``schema`` (:func:`engine.operator.to_arrow`), its
    key codes turned into the values of ``keys`` when given; ``names``: the frame's column of a
    field where the names differ; ``dictionary``: text held as codes (key codes, categorical
    columns) stays dictionary-encoded, its field typed so (see :func:`write_part`)."""
    arrays = []
    for f in schema:
        column = frame[names.get(f.name, f.name) if names else f.name]
        arrays.append(keys.column(column, f.type, dictionary)
                      if keys is not None and f.name == keys.key
                      else column_to_arrow(column, f.type, dictionary))
    if dictionary:
        schema = pa.schema([f.with_type(a.type) for f, a in zip(schema, arrays, strict=True)],
                           metadata=schema.metadata)
    return pa.Table.from_arrays(arrays, schema=schema)


def event_table(frames: Sequence[pd.DataFrame], schema: pa.Schema,
                keys: KeyValues | None = None) -> pa.Table | None:
    """Events (``frames``, one after the other) as the late and quarantine tables store them:
    recording columns, arrival_seq, reason; None without events."""
    tables = [arrow_table(f, schema, keys, {ARRIVAL: SEQ}) for f in frames if not f.empty]
    if not tables:
        return None
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables).combine_chunks()


def output_table(frame: pd.DataFrame, schema: pa.Schema, batch: int,
                 keys: KeyValues | None = None) -> pa.Table | None:
    """An operator's output rows of ``batch`` as the output table stores them (its ``batch``
    column added); None without rows."""
    if frame.empty:
        return None
    i = schema.get_field_index("batch")
    table = arrow_table(frame, schema.remove(i), keys, dictionary=True)
    return table.add_column(i, schema.field(i), pa.array(np.full(len(frame), batch, "int64")))


def part_path(plan: StepPlan, batch: int, kind: str, group: range) -> str:
    """The path of the Parquet file of ``kind`` for ``batch`` of the buckets ``group`` (named
    so: :func:`buckets_of_file`), and after the task attempt that writes it (asked in the
    task's own thread)."""
    ctx = TaskContext.get()
    attempt = ctx.taskAttemptId() if ctx else 0
    of = part_name(group, plan.buckets)
    return f"{plan.dirs[kind]}/part-b{of}-n{batch:06d}-a{attempt}.parquet"


class PartWriter:
    """:func:`write_part` at :func:`part_path` behind the step, for the time of a ``with``
    block: each file is encoded and written in a thread of the writer's own while the caller
    steps the next batch (Arrow encodes and writes without holding the interpreter's lock),
    :data:`IN_FLIGHT` at most; :meth:`rows` gives the rows of the files and those :meth:`add`
    gave, in the order of the calls. A table handed to :meth:`write` may share memory with the
    frames it was made from (numbers are converted without a copy): an operator's step makes
    new frames, never changing the state it was given
    (:meth:`engine.operator.KeyedOperator.step`)."""

    #: Files encoded or written at once, at most (a step waits for the oldest beyond): the
    #: tables waiting to be written are held in memory.
    IN_FLIGHT = 2

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1)
        self._pending: list[Future | dict] = []
        self._in_flight: deque[Future] = deque()

    def __enter__(self) -> PartWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self._pool.shutdown(cancel_futures=True)  # (after a failed step: the writes started end)

    def write(self, plan: StepPlan, batch: int, kind: str, table: pa.Table | None,
              group: range) -> None:
        if table is None:
            return
        while len(self._in_flight) >= self.IN_FLIGHT:
            self._in_flight.popleft().result()
        future = self._pool.submit(write_part, part_path(plan, batch, kind, group), batch,
                                   kind, table, group)
        self._pending.append(future)
        self._in_flight.append(future)

    def add(self, row: dict) -> None:
        """A row without a file (:func:`count_row`), in its place among the files'."""
        self._pending.append(row)

    def rows(self) -> list[dict]:
        """Every row, once every file is written (a failed write raises here)."""
        return [r.result() if isinstance(r, Future) else r for r in self._pending]


def write_part(path: str, batch: int, kind: str, table: pa.Table, group: range) -> dict:
    """Write ``table`` as the Parquet file ``path`` of ``kind`` for ``batch`` of the buckets
    ``group`` (:func:`part_path`); returns its file row."""
    # dictionary pages only for text: on numbers they cost more time than they save space;
    # integers and times delta-packed (on a 97,000-row select output: a quarter less time and
    # half the bytes of plain pages)
    text = [f.name for f in table.schema
            if pa.types.is_string(f.type) or pa.types.is_dictionary(f.type)]
    packed = {f.name: "DELTA_BINARY_PACKED" for f in table.schema
              if pa.types.is_integer(f.type) or pa.types.is_timestamp(f.type)}
    # dictionary arrays are written as they are, without Parquet statistics (min and max of
    # their text took the writer longer than the column itself; the Delta stats keep no text
    # bounds, and their null counts come from the arrays), and without the Arrow schema in the
    # footer, so that they read back as the table's text type
    coded = {f.name for f in table.schema if pa.types.is_dictionary(f.type)}
    footer: list[pq.FileMetaData] = []
    sink = pa.BufferOutputStream()  # one write of the whole file (cheaper than the writer's)
    pq.write_table(table, sink, use_dictionary=text, column_encoding=packed,
                   write_statistics=[n for n in table.column_names if n not in coded],
                   store_schema=not coded, metadata_collector=footer)
    data = sink.getvalue()
    _write_file(path, data)
    rows, stats = file_stats(path, footer[0], {n: table.column(n).null_count for n in coded})
    return {"batch": batch, "kind": kind, "bucket": group[0] if len(group) == 1 else -1,
            "path": path, "size": data.size,
            "rows": rows, "stats": stats}


def _write_file(path: str, data: pa.Buffer) -> None:
    """Write ``data`` as the file ``path`` (a local path, making its directory for the first
    file: one system call less for the others; or a URI: one object, written whole)."""
    if is_remote(path):
        fs, inner = filesystem(path)
        with fs.open_output_stream(inner) as out:
            out.write(data)
        return
    try:
        with open(path, "wb") as out:
            out.write(data)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as out:
            out.write(data)


def count_row(batch: int, kind: str, bucket: int, rows: int) -> dict:
    """A row without a file a worker reports: how many events of the batch it stepped
    (``input``), or found late or quarantined (``late``, ``quarantine``)."""
    return {"batch": batch, "kind": kind, "bucket": bucket, "path": "", "size": 0,
            "rows": rows, "stats": ""}


def files_table(rows: pd.DataFrame) -> pa.Table:
    """The file rows of a worker (:func:`run_bucket`) as an Arrow table of ``FILES_SCHEMA``."""
    return pa.Table.from_pandas(rows, schema=_FILES_ARROW, preserve_index=False)


def collect_files(plan: StepPlan, rows: list) -> dict[int, StepFiles]:
    out = {}
    for batch, _, _ in plan.batches:
        staged: dict[str, list[StagedFile]] = {kind: [] for kind in KINDS}
        counted = {"input": 0, "late": 0, "quarantine": 0, "read": 0}
        buckets = set()
        mine = (r for r in rows if r["batch"] == batch)
        for r in sorted(mine, key=lambda r: (r["kind"], r["path"])):
            if r["kind"] == "read":  # input bytes a task read (see direct_exchange)
                counted["read"] += r["size"]
            elif not r["path"]:
                counted[r["kind"]] += r["rows"]
                if r["kind"] == "input":
                    buckets.add(int(r["bucket"]))
            else:
                staged[r["kind"]].append(StagedFile(path=r["path"], size=r["size"],
                                                    num_records=r["rows"], stats=r["stats"]))
        out[batch] = StepFiles(staged=staged, buckets=buckets, rows_seen=counted.pop("input"),
                               bytes_read=counted.pop("read"), events=counted)
    return out

"""Spark execution of the steps of a keyed engine operator.

Keys are hashed into a fixed number of buckets. The events of a group of consecutive batches reach
their bucket either by Spark's shuffle (:func:`execute_step`) or by each bucket's task reading the
input files itself (:func:`execute_direct`), and each bucket runs in a Python worker that reads the
bucket's current state (its own file, or its rows of a file of every bucket: see
:func:`run_bucket`), steps the engine through the group's batches in order, and writes each
batch's output and new state rows, and the job's late and quarantined events, as Parquet files
straight into the run's tables. Workers return only file descriptions: the driver never collects
rows; it commits the listed files to Delta, batch by batch. A bucket without events in a batch
keeps its state file. One Spark job per group of batches (so its fixed cost is shared),
one set of commits per batch. Operators that use key values only to group and order rows (window
operators) get integer codes that sort like the values; the worker writes the values back.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import TaskContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from engine.operator import REASON, SEQ, TIME, KeyedOperator, column_to_arrow, exact_pandas
from engine.ordering import in_order
from jobs.execution.derived_columns import WorkerDerive
from jobs.storage import StagedFile, file_stats

BUCKET = "__bucket"
FILES_SCHEMA = ("batch long, kind string, bucket long, path string, size long, rows long, "
                "stats string")
_COLUMNS = ["batch", "kind", "bucket", "path", "size", "rows", "stats"]
_FILES_ARROW = pa.schema([(c, pa.string() if c in ("kind", "path", "stats") else pa.int64())
                          for c in _COLUMNS])
#: Tables a step writes; each worker also reports an ``input`` row (rows it saw).
KINDS = ("output", "late", "quarantine", "state")
_BUCKET_FILE = re.compile(r"part-b(\d+|all)-")


@dataclass(frozen=True)
class StepPlan:
    """Everything a worker needs to run one batch (pickled into the UDF)."""

    op: KeyedOperator
    batches: tuple[tuple[int, int, int], ...]  # (batch id, first seq, end seq), in order
    dirs: dict[str, str]  # kind -> the staging directory of its Parquet files (all batches)
    schemas: dict[str, pa.Schema]  # kind -> Arrow schema of its table
    recording_columns: tuple[str, ...]
    time_column: str
    # bucket -> its state files (a file of every bucket is in each bucket's list)
    state_files: dict[int, list[str]] = field(default_factory=dict)
    buckets: int = 1  # the run's buckets
    finish: bool = False  # the last of ``batches`` is the end-of-input flush
    kernel_dir: str | None = None  # QRE kernel cache of the workers (``REPRISE_KERNEL_DIR``)
    derive: WorkerDerive | None = None  # derived columns computed by the workers (direct)
    # late/quarantine -> the last batch whose events of that kind the table holds already (an
    # earlier attempt committed them): the workers count those batches' events, write none
    events_done: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class StepFiles:
    """What the workers of one batch wrote, and which buckets they stepped. The late and
    quarantined events of a job's batches are written together, as files of its last stepped
    batch; ``events`` counts each batch's own (``late``, ``quarantine``)."""

    staged: dict[str, list[StagedFile]]
    buckets: set[int]
    rows_seen: int
    events: dict[str, int]


def bucket_of_file(path: str) -> int | None:
    """The bucket a state file belongs to (encoded in its name by :func:`_write`); None for a
    file holding the state of every bucket (written where the buckets step as one)."""
    m = _BUCKET_FILE.search(path.rsplit("/", 1)[-1])
    if not m:
        raise ValueError(f"state file {path} does not carry a bucket number")
    return None if m.group(1) == "all" else int(m.group(1))


def bucketed(df: DataFrame, key: str, buckets: int) -> DataFrame:
    """Add the bucket column (a stable hash of the key)."""
    return df.withColumn(BUCKET, F.pmod(F.xxhash64(F.col(key)), F.lit(buckets)))


#: The late and quarantine tables' column of an event's arrival sequence (``SEQ`` in a batch).
ARRIVAL = "arrival_seq"


@dataclass(frozen=True)
class KeyValues:
    """The key values behind the integer codes a worker hands its operator (by code)."""

    key: str
    values: np.ndarray

    @cached_property
    def _arrow(self) -> pa.Array:
        return pa.array(self.values, from_pandas=True)

    @cached_property
    def index(self) -> pd.Index:
        """:attr:`values` as an index (code of a value: its position)."""
        return pd.Index(self.values)

    def decode(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with its key codes turned back into key values."""
        if frame.empty:
            return frame
        codes = frame[self.key].to_numpy(dtype="int64")
        return frame.assign(**{self.key: self.values.take(codes)})

    def column(self, codes: pd.Series, type_: pa.DataType, dictionary: bool = False
               ) -> pa.Array:
        """The key values of ``codes`` as ``type_``; ``dictionary``: text keys as a dictionary
        array (the codes over the values, not expanded)."""
        indices = pa.array(codes.to_numpy(dtype="int64"))
        if dictionary and pa.types.is_string(type_) and self._arrow.type == type_:
            return pa.DictionaryArray.from_arrays(indices, self._arrow)
        return self._arrow.take(indices).cast(type_)


def arrow_table(frame: pd.DataFrame, schema: pa.Schema, keys: KeyValues | None = None,
                names: Mapping[str, str] | None = None, dictionary: bool = False) -> pa.Table:
    """``frame`` (non-empty) as a table of ``schema`` (:func:`engine.operator.to_arrow`), its
    key codes turned into the values of ``keys`` when given; ``names``: the frame's column of a
    field where the names differ; ``dictionary``: text held as codes (key codes, categorical
    columns) stays dictionary-encoded, its field typed so (see :func:`_write`)."""
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


def _write(plan: StepPlan, batch: int, kind: str, table: pa.Table | None, bucket: int | None
           ) -> dict | None:
    """Write ``table`` (None: nothing) as the bucket's Parquet file of ``kind`` for ``batch``
    (``bucket`` None: a state file of every bucket); returns its file row."""
    if table is None:
        return None
    ctx = TaskContext.get()
    attempt = ctx.taskAttemptId() if ctx else 0
    of = "all" if bucket is None else f"{bucket:05d}"
    path = f"{plan.dirs[kind]}/part-b{of}-n{batch:06d}-a{attempt}.parquet"
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
    return {"batch": batch, "kind": kind, "bucket": -1 if bucket is None else bucket,
            "path": path, "size": data.size,
            "rows": rows, "stats": stats}


def _write_file(path: str, data: pa.Buffer) -> None:
    """Write ``data`` as the file ``path`` (local), making its directory for the first file
    (one system call less for the others)."""
    try:
        with open(path, "wb") as out:
            out.write(data)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as out:
            out.write(data)


def _quarantine(events: pd.DataFrame, plan: StepPlan) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split off events the operator cannot place: no key or no event time."""
    key = plan.op.key
    no_key = events[key].isna().to_numpy()
    no_time = events[TIME].isna().to_numpy()
    missing = no_key | no_time
    bad = events[missing].copy()
    bad[REASON] = [f"missing key column {key!r}" if k else
                   f"missing time column {plan.time_column!r}" for k in no_key[missing]]
    good = events[~missing] if missing.any() else events
    if good[TIME].dtype != np.int64:  # a column that held nulls is nullable Int64
        good = good.assign(**{TIME: good[TIME].astype("int64")})
    return good, bad


def _per_batch(events: pd.DataFrame, ends: np.ndarray) -> list[pd.DataFrame]:
    """``events`` cut into the plan's batches (``ends``: each batch's end of arrival range)."""
    seq = events[SEQ].to_numpy(dtype="int64")
    if not in_order([seq]):  # the Spark exchange delivers rows in any order
        order = np.argsort(seq, kind="stable")
        events, seq = events.iloc[order], seq[order]
    bounds = np.searchsorted(seq, ends, side="left")
    return [events.iloc[a:b] for a, b in zip(np.r_[0, bounds][:-1], bounds, strict=True)]


def _load_state(plan: StepPlan, bucket: int | None) -> pd.DataFrame:
    """The state of ``bucket`` (None: of every bucket) before the plan's batches."""
    codec = plan.op.state_codec
    files = (plan.state_files.get(bucket, []) if bucket is not None
             else list(dict.fromkeys(f for b in sorted(plan.state_files)
                                     for f in plan.state_files[b])))
    if not files:
        return plan.op.init()
    table = pa.concat_tables(pq.read_table(f, schema=codec.schema) for f in files)
    if bucket is not None and _of_every_bucket(plan, bucket):  # this bucket's rows of it
        table = table.filter(pa.array(
            key_buckets(table.column(plan.op.key), plan.buckets) == bucket))
    return codec.decode(table)


def _of_every_bucket(plan: StepPlan, bucket: int) -> bool:
    """Whether the bucket's state is in a file of every bucket (it is then the only file)."""
    return any(bucket_of_file(f) is None for f in plan.state_files.get(bucket, []))


def _count(batch: int, kind: str, bucket: int, rows: int) -> dict:
    """A row without a file a worker reports: how many events of the batch it stepped
    (``input``), or found late or quarantined (``late``, ``quarantine``)."""
    return {"batch": batch, "kind": kind, "bucket": bucket, "path": "", "size": 0,
            "rows": rows, "stats": ""}


def key_codes(key: str, frames: list[pd.DataFrame]) -> tuple[list[pd.DataFrame], KeyValues]:
    """``frames`` with their ``key`` values replaced by integer codes that sort like the values,
    and the values by code (see :attr:`KeyedOperator.codes_keys`: hashing and sorting ints is
    much cheaper than strings). A categorical key column is coded through its categories."""
    local = [_factorized(f[key]) for f in frames]
    values = pd.Index(np.concatenate([distinct for _, distinct in local])).unique().sort_values()
    coded = []
    for frame, (codes, distinct) in zip(frames, local, strict=True):
        frame = frame.copy(deep=False)  # a new key column, the others shared (assign copies)
        frame[key] = values.get_indexer(distinct)[codes]
        coded.append(frame)
    return coded, KeyValues(key, values.to_numpy(dtype=object))


def _factorized(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(code of each row, distinct values by code) of a column without nulls."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy(), column.cat.categories.to_numpy(dtype=object)
    return pd.factorize(column.to_numpy(dtype=object))


@dataclass(frozen=True)
class BucketSplit:
    """A bucket's events as :func:`run_bucket` steps them, per batch of the plan: those the
    operator can place (keys as codes of ``keys`` for an operator that takes codes) and those it
    quarantines. It depends only on the operator's key, time column and ``codes_keys`` and on
    the batches, so operators that agree on those can step one split (a shared job splits each
    stream's events once for all its members)."""

    good_of: list[pd.DataFrame]
    bad_of: list[pd.DataFrame]
    keys: KeyValues | None


def _steps(plan: StepPlan) -> tuple[tuple[int, int, int], ...]:
    """The plan's batches that step events (not the end-of-input flush)."""
    return plan.batches[:-1] if plan.finish else plan.batches


def split_bucket(plan: StepPlan, events: pd.DataFrame) -> BucketSplit:
    """``events`` (one bucket's) split as :func:`run_bucket` steps them."""
    good, bad = _quarantine(events, plan)
    keys = None
    if plan.op.codes_keys:
        (good,), keys = key_codes(plan.op.key, [good])
    ends = np.asarray([hi for _, _, hi in _steps(plan)], dtype="int64")
    return BucketSplit(_per_batch(good, ends), _per_batch(bad, ends), keys)


def batch_buckets(plan: StepPlan, of: np.ndarray, seq: np.ndarray, buckets: int) -> np.ndarray:
    """The events of each batch the plan steps (rows) in each bucket (columns), for
    :func:`run_bucket`'s ``by_bucket``: ``of``: each event's bucket, ``seq``: its arrival
    sequence, ascending (as the input files give it)."""
    cuts = np.searchsorted(seq, [plan.batches[0][1], *(hi for _, _, hi in _steps(plan))])
    return np.array([np.bincount(of[a:b], minlength=buckets) for a, b in pairwise(cuts)],
                    "int64").reshape(-1, buckets)


def _coded_state(state: pd.DataFrame, split: BucketSplit
                 ) -> tuple[pd.DataFrame, list[pd.DataFrame], KeyValues]:
    """``state`` with its keys as codes of the split's key values, the split's events and those
    values (the events recoded when the state holds keys they lack): codes that sort like the
    values, as :func:`key_codes` gives ``state`` and the events together."""
    keys, good_of = split.keys, split.good_of
    assert keys is not None
    codes, distinct = _factorized(state[keys.key])
    where = keys.index.get_indexer(distinct)
    if (where < 0).any():
        values = keys.index.append(pd.Index(distinct)).unique().sort_values()
        recode = values.get_indexer(keys.index)
        good_of = [f if f.empty else f.assign(**{keys.key: recode.take(
            f[keys.key].to_numpy(dtype="int64"))}) for f in good_of]
        keys = KeyValues(keys.key, values.to_numpy(dtype=object))
        where = keys.index.get_indexer(distinct)
    state = state.copy(deep=False)
    state[keys.key] = where[codes]
    return state, good_of, keys


def run_bucket(plan: StepPlan, bucket: int, events: pd.DataFrame | BucketSplit,
               by_bucket: np.ndarray | None = None) -> pd.DataFrame:
    """The worker side: step one bucket of keys through the plan's batches (``events``: the
    bucket's, or their :func:`split_bucket`). ``by_bucket``: ``events`` hold the keys of
    every bucket, with ``by_bucket[i, b]`` events of bucket ``b`` in the plan's ``i``-th batch:
    the buckets step as one (the operators are key by key), and a batch with events writes one
    state file of every bucket (see :func:`execute_direct`); in a shared job the counts include
    the events the cluster's W dropped (they count as seen, stepped past like events failing
    ``where:``). A bucket stepped alone whose state is in a file of every bucket writes its
    own part of it in every batch, events or not, so that each batch's commit covers every
    bucket and drops that file (the first commits may be an earlier attempt's, found done)."""
    if "engine.qre" in sys.modules:  # a QRE operator came with the plan: set its kernel cache
        sys.modules["engine.qre"].configure_cache(plan.kernel_dir)
    op = plan.op
    state = _load_state(plan, bucket if by_bucket is None else None)
    rows: list[dict | None] = []
    split = events if isinstance(events, BucketSplit) else split_bucket(plan, events)
    good_of, keys = split.good_of, split.keys
    if keys is not None:
        state, good_of, keys = _coded_state(state, split)
    schemas = plan.schemas
    own = by_bucket is None and _of_every_bucket(plan, bucket)
    pending: dict[str, list[pd.DataFrame]] = {"late": [], "quarantine": []}  # to be written
    steps = _steps(plan)
    for i, (batch, _, _) in enumerate(steps):
        batch_good, batch_bad = good_of[i], split.bad_of[i]
        seen_of = ({bucket: len(batch_good) + len(batch_bad)} if by_bucket is None else
                   {b: int(n) for b, n in enumerate(by_bucket[i])})
        if not sum(seen_of.values()):  # no event of this bucket in this batch: same state
            if not own:
                continue  # (its state file stays)
            rows.append(_count(batch, "input", bucket, 0))
        else:
            result = op.step(state, batch_good)
            state = result.state
            rejected = keys.decode(result.rejected) if keys else result.rejected
            rows += [_count(batch, "input", b, n) for b, n in seen_of.items()]
            rows.append(_write(plan, batch, "output", output_table(
                result.output, schemas["output"], batch, keys), bucket))
            for kind, found in (("late", [result.late]), ("quarantine", [batch_bad, rejected])):
                rows.append(_count(batch, kind, bucket, sum(len(f) for f in found)))
                if batch > plan.events_done.get(kind, -1):
                    pending[kind] += found
        table = None if state.empty else arrow_table(state, schemas["state"], keys,
                                                           dictionary=True)
        rows.append(_write(plan, batch, "state", table, bucket if by_bucket is None else None))
    if steps:  # the job's late and quarantined events: one file each
        last = steps[-1][0]
        rows += [_write(plan, last, "late", event_table(pending["late"], schemas["late"], keys),
                        bucket),
                 _write(plan, last, "quarantine", event_table(pending["quarantine"],
                                                              schemas["quarantine"]), bucket)]
    if plan.finish:  # the end-of-input flush: the plan's last batch
        batch = plan.batches[-1][0]
        rows += [_count(batch, "input", b, 0) for b in ([bucket] if by_bucket is None
                                                        else range(by_bucket.shape[1]))]
        rows.append(_write(plan, batch, "output", output_table(
            op.finish(state), schemas["output"], batch, keys), bucket))
    return pd.DataFrame([r for r in rows if r is not None], columns=_COLUMNS)


def execute_step(plan: StepPlan, events: DataFrame, buckets: int) -> dict[int, StepFiles]:
    """Run the plan's batches in one Spark job; returns what each batch wrote.

    The workers receive each bucket's events as Arrow (``applyInArrow``), so int columns that
    hold nulls reach the operator exact, as with the direct exchange (Spark's pandas conversion
    would make them float64). With the end-of-input flush in the plan, the events are cogrouped
    with one row per bucket, so that every bucket runs (also one without events in the range:
    its state is flushed).
    """

    def step(key: tuple[pa.Scalar, ...], table: pa.Table) -> pa.Table:
        return files_table(run_bucket(plan, key[0].as_py(), shuffled_events(plan, table)))

    def step_all(key: tuple[pa.Scalar, ...], table: pa.Table, _: pa.Table) -> pa.Table:
        if not table.num_rows:
            return files_table(run_bucket(plan, key[0].as_py(), no_events(plan)))
        return step(key, table)

    # one partition per bucket (not the session's shuffle partition count)
    grouped = bucketed(events, plan.op.key, buckets).repartition(buckets, BUCKET).groupBy(BUCKET)
    if plan.finish:
        every = events.sparkSession.range(buckets).withColumnRenamed("id", BUCKET)
        job = grouped.cogroup(every.groupBy(BUCKET)).applyInArrow(step_all, FILES_SCHEMA)
    else:
        job = grouped.applyInArrow(step, FILES_SCHEMA)
    return collect_files(plan, job.collect())


def shuffled_events(plan: StepPlan, table: pa.Table) -> pd.DataFrame:
    """One bucket's events as Spark's exchange hands them (Arrow), as the frame the direct
    exchange builds (:func:`bucket_events`): ints with nulls nullable ``Int64``, nanosecond
    timestamps, a text key categorical for an operator that takes key codes or categorical
    keys."""
    table = table.drop_columns([BUCKET])
    key = plan.op.key
    i = table.schema.get_field_index(key)
    text = table.schema.field(i).type
    if (plan.op.codes_keys or plan.op.categorical_keys) and (
            pa.types.is_string(text) or pa.types.is_large_string(text)):
        table = table.set_column(i, key, table.column(i).dictionary_encode())
    return exact_pandas(table, coerce_temporal_nanoseconds=True)


def files_table(rows: pd.DataFrame) -> pa.Table:
    """The file rows of a worker (:func:`run_bucket`) as an Arrow table of ``FILES_SCHEMA``."""
    return pa.Table.from_pandas(rows, schema=_FILES_ARROW, preserve_index=False)


def bucket_events(plan: StepPlan, files: list[dict], bucket: int | None, buckets: int,
                  ranged: list[tuple[pa.Table, np.ndarray, np.ndarray]] | None = None
                  ) -> pd.DataFrame:
    """The events of one bucket (None: of every bucket) in the plan's arrival range, read
    straight from the input files (``ranged``: those files as :func:`range_events` read them,
    when already read).

    Keys are bucketed with pandas' stable hash (not Spark's), so a run sticks to one exchange.
    A text key column is read dictionary-encoded (each distinct key is hashed once); it stays
    categorical for an operator that takes key codes or categorical keys and becomes plain values
    otherwise.
    """
    lo, key, tables = plan.batches[0][1], plan.op.key, []
    for table, seq, of in range_events(plan, files, buckets) if ranged is None else ranged:
        if bucket is not None:
            mine = of == bucket
            table, seq = table.filter(pa.array(mine)), seq[mine]
        times = table.column(plan.time_column).cast(pa.timestamp("us")).cast(pa.int64())
        tables.append(table.append_column(SEQ, pa.array(seq)).append_column(TIME, times))
    if not tables:
        return no_events(plan)
    # nanosecond timestamps, as the spark exchange's workers convert them too
    events = exact_pandas(pa.concat_tables(tables), coerce_temporal_nanoseconds=True)
    if plan.derive:
        events = plan.derive.add_to(
            events, lo, lambda table: key_buckets(table.column(key), buckets) == bucket
            if bucket is not None else np.ones(table.num_rows, bool))
    if isinstance(events[key].dtype, pd.CategoricalDtype) and not (
            plan.op.codes_keys or plan.op.categorical_keys):
        events[key] = events[key].to_numpy(dtype=object)
    return events


def range_events(plan: StepPlan, files: list[dict], buckets: int
                 ) -> list[tuple[pa.Table, np.ndarray, np.ndarray]]:
    """Each input file's events in the plan's arrival range: (rows, their arrival sequence,
    their bucket), the files read once for every bucket."""
    key = plan.op.key
    derived = plan.derive.names if plan.derive else ()
    columns = [c for c in plan.recording_columns if c not in derived]
    return [(table, seq, key_buckets(table.column(key), buckets)) for table, seq in read_range(
        files, columns, [key], plan.batches[0][1], plan.batches[-1][2])]


def read_range(files: list[dict], columns: Sequence[str], dictionary: list[str], lo: int,
               hi: int) -> list[tuple[pa.Table, np.ndarray]]:
    """Each input file's rows with arrival sequence in ``[lo, hi)`` (``columns``; those of
    ``dictionary`` read dictionary-encoded) and their arrival sequence."""
    out = []
    for f in files:
        fs, path = pa.fs.FileSystem.from_uri(f["uri"]) if "://" in f["uri"] else (
            pa.fs.LocalFileSystem(), f["uri"])
        table = pq.read_table(path, filesystem=fs, columns=list(columns),
                              read_dictionary=dictionary)
        seq = np.arange(f["offset"], f["offset"] + table.num_rows, dtype="int64")
        inside = (seq >= lo) & (seq < hi)
        if not inside.all():
            table, seq = table.filter(pa.array(inside)), seq[inside]
        out.append((table, seq))
    return out


def no_events(plan: StepPlan) -> pd.DataFrame:
    """An empty frame of the events a worker steps (recording columns, sequence, time)."""
    return pd.DataFrame(columns=[*plan.recording_columns, SEQ, TIME])


def key_buckets(keys: pa.ChunkedArray, buckets: int) -> np.ndarray:
    """Bucket of each key: pandas' stable hash of the key value (each distinct key hashed once)."""
    parts = [np.empty(0, dtype="int64")]
    for chunk in keys.chunks:
        encoded = chunk if pa.types.is_dictionary(chunk.type) else chunk.dictionary_encode()
        distinct = encoded.dictionary.to_numpy(zero_copy_only=False)
        values = np.concatenate([distinct.astype(object), np.array([None], dtype=object)])
        of_value = (pd.util.hash_array(values) % np.uint64(buckets)).astype("int64")
        parts.append(of_value[encoded.indices.fill_null(len(distinct)).to_numpy(
            zero_copy_only=False)])
    return np.concatenate(parts)


def execute_direct(spark: SparkSession | None, plan: StepPlan, files: list[dict], buckets: int
                   ) -> dict[int, StepFiles]:
    """Run the plan's batches in one Spark job, one task per bucket reading its own events.

    No shuffle: each task reads the input files of the range with pyarrow and keeps its keys
    (every task reads the range once, which is cheap next to Spark's exchange on a few workers).
    ``spark`` None: the buckets run in this process, without a Spark job (for a few events, e.g.
    a small replay or a continuation's new commits, the job's fixed cost would dominate), and
    as one: the input files are read once, the operator (key by key) steps every bucket's keys
    at once; each batch writes one file per table, state included (a file of every bucket,
    which a later Spark job's tasks read per bucket).
    """
    if spark is None:  # the input read once; the buckets step as one (key by key, alike)
        ranged = range_events(plan, files, buckets)
        by_bucket = batch_buckets(
            plan, np.concatenate([np.empty(0, "int64"), *(of for _, _, of in ranged)]),
            np.concatenate([np.empty(0, "int64"), *(seq for _, seq, _ in ranged)]), buckets)
        events = bucket_events(plan, files, None, buckets, ranged)
        return collect_files(plan, run_bucket(plan, 0, events, by_bucket=by_bucket
                                              ).to_dict("records"))

    def step(bucket: int) -> pd.DataFrame:
        return run_bucket(plan, bucket, bucket_events(plan, files, bucket, buckets))

    return collect_files(plan, per_task(spark, list(range(buckets)), step))


def execute_finish(spark: SparkSession | None, plan: StepPlan) -> dict[int, StepFiles]:
    """Run the operator's end-of-input flush on Spark, one task per bucket holding state."""
    empty = no_events(plan)
    return collect_files(plan, per_task(spark, sorted(plan.state_files),
                                          lambda bucket: run_bucket(plan, bucket, empty)))


def per_task(spark: SparkSession | None, buckets: list[int],
             work: Callable[[int], pd.DataFrame]) -> list[dict]:
    """``work(bucket)`` for every bucket (or part of a shared job), each in its own Spark task
    (one partition each, no shuffle, so the tasks run in parallel); the rows of all results.

    A plain RDD job: it starts its Python tasks sooner than a DataFrame ``mapInPandas`` job.
    """
    if not buckets:
        return []
    if spark is None:  # a small run in the driver process (see Replay.local_events)
        return [row for bucket in buckets for row in work(bucket).to_dict("records")]
    tasks = spark.sparkContext.parallelize(buckets, len(buckets))
    return tasks.flatMap(lambda bucket: work(bucket).to_dict("records")).collect()


def collect_files(plan: StepPlan, rows: list) -> dict[int, StepFiles]:
    out = {}
    for batch, _, _ in plan.batches:
        staged: dict[str, list[StagedFile]] = {kind: [] for kind in KINDS}
        counted = {"input": 0, "late": 0, "quarantine": 0}
        buckets = set()
        mine = (r for r in rows if r["batch"] == batch)
        for r in sorted(mine, key=lambda r: (r["kind"], r["path"])):
            if not r["path"]:
                counted[r["kind"]] += r["rows"]
                if r["kind"] == "input":
                    buckets.add(int(r["bucket"]))
            else:
                staged[r["kind"]].append(StagedFile(path=r["path"], size=r["size"],
                                                    num_records=r["rows"], stats=r["stats"]))
        out[batch] = StepFiles(staged=staged, buckets=buckets, rows_seen=counted.pop("input"),
                               events=counted)
    return out

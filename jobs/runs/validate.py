"""Compare a replay's output with the naive reference over the same pinned input."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from engine.catalog import Catalog
from engine.operator import SEQ, exact_pandas
from engine.pipeline import chain_reference
from engine.specs import QuerySpec, RecordingSpec
from jobs.execution.arrival import input_index, sequenced
from jobs.execution.bucket_reference import ReferenceResult, placeable, reference_by_bucket
from jobs.runs.replay import Replay
from jobs.runs.run_context import RunContext
from jobs.runs.run_info import ReplayError, RunInfo, read_run
from jobs.runs.run_query import query_of_run

#: Float columns compare with this tolerance (sums of floats depend on the addition order).
REL_TOL = 1e-9
ABS_TOL = 1e-9


@dataclass
class Diff:
    """Differences between replay output and reference, keyed by the output's key columns."""

    missing: list[dict] = field(default_factory=list)  # in the reference, not in the replay
    extra: list[dict] = field(default_factory=list)  # in the replay, not in the reference
    different: list[tuple[dict, dict]] = field(default_factory=list)  # (replay, reference)
    duplicates: list[dict] = field(default_factory=list)  # emitted more than once

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.different or self.duplicates)


@dataclass
class ValidationReport:
    """Outcome of ``reprise validate``."""

    run_id: str
    output_rows: int
    reference_rows: int
    diff: Diff
    late_replay: int
    late_reference: int
    late_mismatch: list[int]  # arrival seqs late or quarantined in one and not the other
    input_rows: int
    processed: int
    quarantined: int
    reconciles: bool
    tolerance: str = f"floats: relative {REL_TOL:g}, absolute {ABS_TOL:g}; integers exact"
    #: Said when the catalog's query file changed since the run (the run's definition is used).
    note: str = ""
    #: A pipeline stage's run: its output against the composition of its chain's references
    #: over the recording (:func:`chain_diff`); None for a query over a recording.
    chain: Diff | None = None

    @property
    def ok(self) -> bool:
        return (self.diff.ok and not self.late_mismatch and self.reconciles
                and (self.chain is None or self.chain.ok))


def _null(v: object) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def same_value(a: object, b: object, exact: bool = False) -> bool:
    """Equal values; floats within the tolerance unless ``exact`` (an int column: whatever
    pandas held the values in, Python compares an int with a float exactly, so a value that
    went through float64 and lost its last bits differs); lists element by element."""
    a, b = (v.tolist() if isinstance(v, np.ndarray) else v for v in (a, b))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_value(x, y, exact) for x, y in zip(a, b,
                                                                                 strict=True))
    a, b = (v.item() if isinstance(v, np.generic) else v for v in (a, b))
    if _null(a) or _null(b):
        return _null(a) and _null(b)
    if not exact and (isinstance(a, float) or isinstance(b, float)):
        return math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return a == b


def same_arrays(a: pa.Array | pa.ChunkedArray, b: pa.Array | pa.ChunkedArray,
                exact: bool = False) -> np.ndarray:
    """:func:`same_value` of each pair of ``a`` and ``b`` (Arrow arrays of one length),
    vectorised: floats (where either side holds floats, unless ``exact``) within the same
    tolerance, values of one flat type exactly, anything else value by value; null equals
    null only."""
    both_null = np.asarray(pc.and_(pc.is_null(a), pc.is_null(b)), dtype=bool)
    numeric = all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in (a.type, b.type))
    if numeric and not exact and any(pa.types.is_floating(t) for t in (a.type, b.type)):
        x, y = (np.asarray(v.cast(pa.float64()).fill_null(np.nan), dtype="float64")
                for v in (a, b))
        with np.errstate(invalid="ignore"):
            close = np.abs(x - y) <= np.maximum(REL_TOL * np.maximum(np.abs(x), np.abs(y)),
                                                ABS_TOL)
        return close | (x == y) | both_null
    if a.type == b.type and not pa.types.is_nested(a.type):
        return np.asarray(pc.equal(a, b).fill_null(False), dtype=bool) | both_null
    return np.fromiter((same_value(x, y, exact) for x, y in zip(a.to_pylist(), b.to_pylist(),
                                                                 strict=True)),
                       dtype=bool, count=len(a))


def diff_frames(replay: pd.DataFrame, reference: pd.DataFrame, keys: list[str],
                schema: pa.Schema | None = None) -> Diff:
    """Row-level diff of two outputs on ``keys``; value columns compared with :func:`same_value`,
    exactly where ``schema`` (the output's) declares an integer column."""
    diff = Diff()
    values = [c for c in reference.columns if c not in keys]
    ints = {f.name for f in schema if pa.types.is_integer(f.type)} if schema is not None else set()
    seen: dict[tuple, dict] = {}
    for row in replay[reference.columns].to_dict("records"):
        k = tuple(row[c] for c in keys)
        if k in seen:
            diff.duplicates.append(row)
        seen[k] = row
    expected = {tuple(r[c] for c in keys): r for r in reference.to_dict("records")}
    for k, ref in expected.items():
        got = seen.get(k)
        if got is None:
            diff.missing.append(ref)
        elif not all(same_value(got[c], ref[c], c in ints) for c in values):
            diff.different.append((got, ref))
    diff.extra = [row for k, row in seen.items() if k not in expected]
    return diff


def _micros(table: pa.Table) -> pd.DataFrame:
    """``table`` as pandas, timestamp columns as int64 microseconds (as the engine emits them),
    int columns exact (:func:`exact_pandas`)."""
    for i, fld in enumerate(table.schema):
        if pa.types.is_timestamp(fld.type):
            table = table.set_column(i, fld.name, table[fld.name].cast(pa.timestamp("us"))
                                     .cast(pa.int64()))
    return exact_pandas(table)


def _exact_ints(frame: DataFrame, events: pd.DataFrame, recording: RecordingSpec
                ) -> pd.DataFrame:
    """``events`` (``frame`` read by ``toPandas``) with the int columns that came as float64
    (they hold nulls) read again from ``frame`` through Arrow as exact nullable Int64."""
    lossy = [c for c, t in recording.columns.items()
             if t == "int" and c in events and events[c].dtype.kind == "f"]
    if not lossy:
        return events
    exact = exact_pandas(frame.select(SEQ, *lossy).toArrow()).set_index(SEQ)
    return events.assign(**{c: exact[c].reindex(events[SEQ].to_numpy()).array for c in lossy})


@dataclass(frozen=True)
class Reconciliation:
    """Counts of a run's manifest against its input snapshot and its tables."""

    batches_committed: int
    batches_planned: int
    input_rows: int  # rows of the pinned snapshot
    manifest_rows_in: int
    processed: int  # rows_in - late - quarantined
    late_manifest: int
    late_table: int
    quarantined_manifest: int
    quarantined_table: int
    output_manifest: int
    output_table: int

    @property
    def ok(self) -> bool:
        return (self.batches_committed == self.batches_planned
                and self.manifest_rows_in == self.input_rows
                and self.late_manifest == self.late_table
                and self.quarantined_manifest == self.quarantined_table
                and self.output_manifest == self.output_table)


def reconcile(info: RunInfo, manifest: pd.DataFrame, table_rows: dict[str, int]
              ) -> Reconciliation:
    """Reconcile a run's manifest with its input snapshot and its tables' row counts."""
    rows_in, late, bad = (int(manifest[c].sum()) for c in ("rows_in", "late", "quarantined"))
    return Reconciliation(
        batches_committed=len(manifest), batches_planned=info.batches + 1,
        input_rows=sum(f["rows"] for f in info.files), manifest_rows_in=rows_in,
        processed=rows_in - late - bad, late_manifest=late, late_table=table_rows["late"],
        quarantined_manifest=bad, quarantined_table=table_rows["quarantine"],
        output_manifest=int(manifest["rows_out"].sum()), output_table=table_rows["output"])


def reconcile_run(replay: Replay, run_id: str) -> Reconciliation:
    """Check input = processed + late + quarantined, and that the tables hold what the manifest
    says they hold."""
    count = {k: replay.storage.read_arrow(replay.warehouse.run_table(run_id, k)).num_rows
             if replay.storage.exists(replay.warehouse.run_table(run_id, k)) else 0
             for k in ("output", "late", "quarantine")}
    return reconcile(read_run(replay.warehouse, run_id), replay.manifest(run_id).to_pandas(),
                     count)


def validate_run(replay: Replay, catalog: Catalog, run_id: str,
                 on_stage: Callable[[str], None] = lambda stage: None) -> ValidationReport:
    """Recompute the run's query with the reference and diff it against the output table;
    ``on_stage`` hears what it is doing (progress)."""
    info = read_run(replay.warehouse, run_id)
    manifest = replay.manifest(run_id).to_pandas()
    if len(manifest) != info.batches + 1:
        raise ReplayError(f"run {run_id!r} is incomplete ({len(manifest)} of {info.batches + 1} "
                          f"batches committed); resume it with `reprise replay {info.query} "
                          f"--run-id {run_id}` first")
    query, note = query_of_run(info, catalog)
    ctx = RunContext.of(query, catalog.recordings)
    latest = (replay.storage.version(info.input_path)
              if replay.storage.exists(info.input_path) else None)
    if latest is None or info.input_version > latest:
        now = "is gone" if latest is None else f"has versions 0 to {latest}"
        raise ReplayError(f"run {run_id!r} read version {info.input_version} of "
                          f"{info.input_path} (its run.json), which {now}: the recording was "
                          f"made again since; replay `{info.query}` anew")
    frame = sequenced(replay.storage, info.input_path, info.input_version, info.files, 0,
                      info.total, ctx.time_column, ctx.query.derived)
    op = ctx.operator
    if ctx.family.reference_per_key:
        on_stage(f"computing the reference of {query.name} over the {info.total:,} input "
                 f"events of {info.recording} v{info.input_version}, per key bucket")
        ints = tuple(c for c, t in ctx.recording.columns.items() if t == "int")
        ref = reference_by_bucket(frame, ctx.reference(info.cuts), ctx.key, ints, info.buckets)
    else:
        on_stage(f"reading the {info.total:,} input events of {info.recording} "
                 f"v{info.input_version}")
        events, unplaceable = placeable(_exact_ints(frame, frame.toPandas(), ctx.recording),
                                        ctx.key)
        on_stage(f"computing the reference of {query.name}")
        output, late, rejected = ctx.reference(info.cuts)(events)
        ref = ReferenceResult(output, list(late), list(rejected), unplaceable, len(events))
    reference_out, reference_late, reference_rejected = ref.output, ref.late, ref.rejected

    tables = {k: replay.warehouse.run_table(run_id, k) for k in ("output", "late", "quarantine")}
    on_stage("comparing with the run's output, late and quarantine tables")
    output = _micros(replay.storage.read_arrow(tables["output"]))
    diff = diff_frames(op.final_view(output), reference_out, op.output_keys, op.output_schema)
    late = replay.storage.read_arrow(tables["late"]).column("arrival_seq").to_pylist()
    mismatch = sorted(set(late) ^ set(reference_late))
    quarantined = replay.storage.read_arrow(tables["quarantine"]).column(
        "arrival_seq").to_pylist()
    quarantine_mismatch = sorted(set(quarantined) ^ {*ref.unplaceable, *reference_rejected})
    counts = reconcile(info, manifest, {"output": len(output), "late": len(late),
                                        "quarantine": len(quarantined)})
    processed = ref.events - len(reference_late) - len(reference_rejected)
    reconciles = counts.ok and processed == counts.processed
    return ValidationReport(run_id=run_id, output_rows=len(output),
                            reference_rows=len(reference_out), diff=diff, late_replay=len(late),
                            late_reference=len(reference_late),
                            late_mismatch=mismatch + quarantine_mismatch,
                            input_rows=info.total, processed=processed,
                            quarantined=counts.quarantined_table, reconciles=reconciles,
                            note=note, chain=chain_diff(replay, catalog, info, query, output,
                                                        on_stage))


def chain_diff(replay: Replay, catalog: Catalog, info: RunInfo, query: QuerySpec,
               output: pd.DataFrame, on_stage: Callable[[str], None]) -> Diff | None:
    """A pipeline stage's ``output`` against the composition of its chain's references over
    the recording its first stage reads, at the run's pinned version
    (:func:`engine.pipeline.chain_reference`), compared as multisets of rows without
    ``arrival_seq`` (a stage numbers the stream it reads; see :mod:`engine.pipeline`): a
    difference here while the stage equals its own reference over the upstream run's output
    puts the fault upstream. None for a query over a recording."""
    if query.upstream is None:
        return None
    first = query.chain[0]
    path, version = replay.warehouse.recording(first.input), info.sources["input"]
    files = [asdict(f) for f in input_index(replay.storage, path, version)]
    total = sum(f["rows"] for f in files)
    on_stage(f"computing the composed reference of {' -> '.join(q.name for q in query.chain)} "
             f"over the {total:,} events of {first.input} v{version}")
    recording = RunContext.of(first, catalog.recordings).recording
    frame = sequenced(replay.storage, path, version, files, 0, total,
                      first.time or recording.time, first.derived)
    events = _exact_ints(frame, frame.toPandas(), recording).sort_values(SEQ, kind="stable")
    expected = chain_reference(query.chain, catalog.recordings, events)[-1]
    ours, theirs = (_row_counts(f.drop(columns=[c for c in ("arrival_seq", "batch", "final")
                                                if c in f]))
                    for f in (output, _micros_frame(expected)))
    return Diff(missing=[dict(r) for r, n in (theirs - ours).items() for _ in range(n)],
                extra=[dict(r) for r, n in (ours - theirs).items() for _ in range(n)])


def _row_counts(frame: pd.DataFrame) -> Counter:
    """The rows of ``frame`` as a multiset of ((column, value), ...), nulls as None, doubles
    to 12 significant digits (within the tolerance), timestamps as microseconds."""
    def canon(value: object) -> object:
        if _null(value) or (not isinstance(value, str) and pd.isna(value)):
            return None
        if isinstance(value, pd.Timestamp):
            return value.value // 1_000
        if isinstance(value, float | np.floating):
            return float(f"{float(value):.12g}")
        return value.item() if isinstance(value, np.generic) else value

    return Counter(tuple(sorted((c, canon(v)) for c, v in row.items()))
                   for row in frame.to_dict("records"))


def _micros_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its timestamp columns as int64 microseconds (as :func:`_micros`)."""
    stamps = [c for c in frame if pd.api.types.is_datetime64_any_dtype(frame[c])]
    return frame.assign(**{c: [None if pd.isna(t) else t.value // 1_000 for t in frame[c]]
                           for c in stamps})

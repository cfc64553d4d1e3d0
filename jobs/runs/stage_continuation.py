"""``--continue`` of a pipeline stage: the stage's run goes on over its continued upstream run.

Continuing the upstream run (in place: the same run, a new segment) keeps its batches before the
segment's first batch and redoes the rest (its provisional end-of-input rows at least). The
stage's run over it is then continued as a run over a recording is: its next segment keeps its
batches before ``k``, the first upstream batch whose output was committed after the version of
the upstream's output the stage read (:func:`first_changed`: the upstream may have been
continued more than once since, on its own), rewinds the rest
(:func:`~jobs.runs.run_segments.rewind`) and steps the new batches from the state it held
there. Its input table gets, in one commit (an app transaction
of the segment), the upstream's output rows of batches ``k`` and later, in emission order,
read from the upstream output's files added since batch ``k - 1``, and loses the rows after the
kept batches (an input file holding rows on both sides is replaced by one of those before, with
the new rows after them). The stage's run keeps its id; its ``run.json`` gets the new input
files and cut points (those of a fresh run over the continued upstream) and a segment record.
"""

from __future__ import annotations

from dataclasses import asdict

import pyarrow as pa
import pyarrow.compute as pc

from engine.specs import QuerySpec
from jobs.execution.arrival import input_index
from jobs.execution.fused_steps import stream_rows
from jobs.runs.pipeline_stage import (
    Replay,
    commit_input,
    input_metadata,
    stage_cuts,
    upstream_read,
)
from jobs.runs.run_context import RunContext
from jobs.runs.run_info import ReplayError, RunInfo, fingerprint, read_run, run_header
from jobs.runs.run_lock import run_lock
from jobs.runs.run_segments import (
    first_segment,
    next_segment,
    pinned_version,
    save_run,
)
from jobs.shared.standalone_compare import STANDALONE_SUFFIX
from jobs.storage import Txn


def stage_run_over(replay: Replay, ctx: RunContext, upstream: RunInfo) -> RunInfo | None:
    """The run of the stage ``ctx`` (its current definition) that read the newest output of
    the run ``upstream``, or None."""
    fp = fingerprint(ctx.query, ctx.operator)
    best: tuple[int, RunInfo] | None = None
    for run_id in replay.warehouse.runs():
        if run_id.endswith(STANDALONE_SUFFIX):  # (the equals_standalone check's, over the same)
            continue
        head = run_header(replay.warehouse.run_dir(run_id) / "run.json")
        if head.query != ctx.query.name or head.fingerprint != fp:
            continue
        info = read_run(replay.warehouse, run_id)
        if info.fused_with:
            continue
        read, version = upstream_read(replay, info)
        if read == upstream.run_id and version is not None and (best is None
                                                                 or version > best[0]):
            best = (version, info)
    return None if best is None else best[1]


def extend_stage(replay: Replay, ctx: RunContext, info: RunInfo, upstream: RunInfo) -> RunInfo:
    """Plan the next segment of the stage's run ``info`` over the continued run ``upstream``
    (complete) under the run's lock: its input table and ``run.json`` (see the module
    docstring). ``info`` as it is when its
    ``run.json`` records the input it has read of the upstream's output as it is now (a killed
    continuation: the lifecycle finishes it); a continuation killed after the input's commit
    and before ``run.json`` plans the segment again (the commit is found done)."""
    storage = replay.storage
    with run_lock(replay.warehouse.run_dir(info.run_id), info.run_id):
        info = read_run(replay.warehouse, info.run_id)
        now = storage.version(replay.warehouse.run_table(upstream.run_id, "output"))
        if (upstream_read(replay, info) == (upstream.run_id, now)
                and info.input_version == storage.version(info.input_path)):
            return info  # (its run.json records the input as it is: planned already)
        cuts = stage_cuts(replay, upstream)
        keep = first_changed(replay, upstream,
                             upstream_read(replay, info, info.input_version)[1])
        k = max(1, len(info.segments))
        version = extend_input(replay, ctx.query, info, upstream, keep, k)
        files = [asdict(f) for f in input_index(storage, info.input_path, version)]
        if sum(f["rows"] for f in files) != cuts[-1]:
            raise ReplayError(f"run {info.run_id!r}: its input table holds "
                              f"{sum(f['rows'] for f in files)} rows after continuing, its "
                              f"upstream's manifest counts {cuts[-1]}; replay the query with "
                              "another --run-id")
        segment = next_segment(info, cuts, keep, pinned_version(upstream))
        info.segments = [*(info.segments or [first_segment(info)]), segment]
        info.cuts, info.files, info.input_version = cuts, files, version
        info.sources = dict(upstream.sources)
        save_run(replay, info)
        return info


def first_changed(replay: Replay, upstream: RunInfo, read: int | None) -> int:
    """The first batch of the run ``upstream`` whose output was committed after version
    ``read`` of its output table (the version a stage's run read; none known: 0). Every
    continuation commits its first batch's output (it removes the rewound batches' rows), so
    the batches before it hold the rows they held at ``read``, however many continuations
    redid later ones since; the stage keeps as many of its own. Their row counts alone (the
    stage's cut points) cannot tell: a redone batch may emit as many rows as the provisional
    end-of-input flush it replaces, other ones."""
    if read is None:
        return 0
    versions = replay.manifest(upstream.run_id).sort_by("batch").column(
        "output_version").to_pylist()
    return next((b for b, v in enumerate(versions) if v is None or v > read), len(versions))


def extend_input(replay: Replay, query: QuerySpec, info: RunInfo, upstream: RunInfo,
                 keep: int, segment: int) -> int:
    """Commit segment ``segment`` of the stage's input table: the rows of its batches before
    ``keep`` stay, the upstream's output rows of batches ``keep`` and later follow them;
    its new version (done once: an app transaction)."""
    storage, path = replay.storage, info.input_path
    txn = Txn(f"{info.run_id}/input", segment)
    done = storage.txn_version(path, txn.app_id)
    if done is not None and done >= segment:
        return storage.version(path)
    boundary = info.cuts[keep]
    schema = storage.schema(path)
    later = [f for f in info.files if f["offset"] + f["rows"] > boundary]
    kept = [storage.read_file(f["uri"], schema=schema).slice(0, boundary - f["offset"])
            for f in later if f["offset"] < boundary]
    output = replay.warehouse.run_table(upstream.run_id, "output")
    version = storage.version(output)
    rows = stream_rows(query, output_after(replay, upstream, keep, output, version))
    return commit_input(storage, path, pa.concat_tables([*kept, rows.cast(schema)]), txn,
                        input_metadata(upstream.run_id, version, info.run_id),
                        remove=[f["uri"] for f in later])


def output_after(replay: Replay, upstream: RunInfo, keep: int, path: str, version: int
                 ) -> pa.Table:
    """The rows of batches ``keep`` and later in the upstream's output table at ``version``,
    read from the files added since its batch ``keep - 1`` was committed (every file when that
    is not known)."""
    storage = replay.storage
    live = storage.live_files(path, version)
    if keep:
        since = replay.manifest(upstream.run_id).column("output_version")[keep - 1].as_py()
        changed = storage.files_changed(path, since, version) if since is not None else None
        if changed is not None:
            live = [f for f in live if f.path in changed[0]]
    schema = storage.schema(path, version)
    parts = [storage.read_file(f.path, schema=schema) for f in live]
    table = pa.concat_tables(parts) if parts else schema.empty_table()
    return table.filter(pc.greater_equal(table.column("batch"), keep))

"""The commits of a group of batches: each batch's output and state, the group's late and
quarantined events, and the manifest rows that mark the batches done.

Every commit is a Delta application transaction (app id ``<run_id>/<table>``, version = batch
id, :meth:`~jobs.runs.run_info.RunInfo.txn`), so a group that is run again after a crash writes
nothing twice: a commit an earlier attempt made is found and its recomputed files are deleted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import pyarrow as pa

from jobs.execution.step_files import buckets_of_file
from jobs.execution.step_plan import StepFiles, StepPlan
from jobs.runs.run_info import ReplayError, RunInfo
from jobs.storage import DeltaStorage, LiveFile, StagedFile, Txn
from jobs.storage.object_paths import delete_file
from jobs.storage.staging import stage_table


@dataclass
class BatchReport:
    """One manifest row, as reported to progress callbacks."""

    batch: int
    kind: str
    rows_in: int
    rows_out: int
    late: int
    quarantined: int
    state_rows: int
    state_bytes: int
    duration_s: float


def batch_meta(info: RunInfo, batch: int) -> dict[str, str]:
    """The metadata of a batch's commits (it finds them again on a retry)."""
    meta = {"reprise.run": info.run_id, "reprise.batch": str(batch)}
    if len(info.segments) > 1:
        meta["reprise.segment"] = str(len(info.segments) - 1)
    return meta


def commit_files(storage: DeltaStorage, path: str, files: list[StagedFile], schema: pa.Schema,
                 txn: Txn, meta: dict, remove: list[str] | None = None,
                 need_version: bool = True, force: bool = False) -> tuple[int | None, bool]:
    """Commit a batch's files once: (table version holding them, skipped as already done).

    A batch that adds and removes nothing leaves an existing table alone (a retry of it
    would write nothing either; ``force``: it is committed all the same); the first batch
    always creates the table. Without ``need_version`` such a no-op returns no version (it
    costs a log read).
    """
    if not files and not remove and not force:
        if not need_version and storage.exists(path):
            return None, False
        version = storage.version_or_none(path) if need_version else None
        if version is not None:
            return version, False
    result = storage.commit_files(path, files, schema, txn=txn, metadata=meta,
                                  remove=remove or ())
    if not result.skipped:
        return result.version, False
    _discard(files)  # committed by an earlier attempt: these recomputed files are spares
    return storage.version_with(path, meta), True


def commit_rows(storage: DeltaStorage, path: str, table: pa.Table, txn: Txn, meta: dict,
                remove: list[str] | None = None, force: bool = False
                ) -> tuple[int | None, bool]:
    """Commit a table's rows once, as one staged Parquet file (none when it has no rows),
    dropping the live files ``remove`` in the same commit (``force``: committed even with no
    rows and nothing to drop): (table version holding them, skipped as already done)."""
    staged = [stage_table(storage, path, table)] if table.num_rows else []
    return commit_files(storage, path, staged, table.schema, txn, meta, remove=remove,
                        force=force)


def commit_group(storage: DeltaStorage, info: RunInfo, tables: dict[str, str], plan: StepPlan,
                 group: list[int], bounds: dict[int, tuple[int, int]],
                 steps: dict[int, StepFiles], live: list[LiveFile], state_version: int | None,
                 started: float, removals: list[str] | None = None,
                 on_commit: Callable[[int], None] | None = None
                 ) -> tuple[list[BatchReport], list[dict], int | None]:
    """Commit the files of a group's batches: (reports, manifest rows, last state version).
    A batch's duration is its share of the group's time since ``started``; ``removals``:
    output files the first batch's output commit removes (that commit is made even when it
    adds and removes nothing, so that a retry finds it done); ``on_commit`` hears each batch
    whose output is committed.

    The tables do not depend on each other (a crash between them is repaired by the
    per-batch transactions): each takes its batches in order, in a thread of its own when
    the storage's commits wait (:meth:`~jobs.storage.DeltaStorage.commits_wait`).
    """
    for batch in group:
        lo, hi = bounds[batch]
        if steps[batch].rows_seen != hi - lo:
            raise ReplayError(f"batch {batch} of run {info.run_id}: expected {hi - lo} input "
                              f"rows (arrival sequence {lo}..{hi}) but the step saw "
                              f"{steps[batch].rows_seen}; the recording changed under the "
                              "pinned version?")
    stepped = [b for b in group if b != info.batches]  # the end-of-input flush: output only
    commits = {
        "output": partial(_commit_appends, storage, info, "output", tables["output"],
                          plan.schemas["output"], group, steps, removals, on_commit),
        **{kind: partial(_commit_events, storage, info, kind, tables[kind], plan, stepped,
                         steps)
           for kind in ("late", "quarantine")},
        "state": partial(_commit_states, storage, info, tables["state"], plan.schemas["state"],
                         stepped, steps, live)}
    if storage.commits_wait(tables["output"]):
        with ThreadPoolExecutor(len(commits)) as pool:
            futures = {kind: pool.submit(commit) for kind, commit in commits.items()}
            done = {kind: future.result() for kind, future in futures.items()}
    else:
        done = {kind: commit() for kind, commit in commits.items()}
    versions, after = done["output"], done["state"]
    reports, rows = [], []
    duration_s = (time.perf_counter() - started) / len(group)  # manifest bookkeeping only
    for batch in group:
        lo, hi = bounds[batch]
        state_version, state_rows, state_bytes = after.get(batch, (state_version, 0, 0))
        events = steps[batch].events
        report = BatchReport(
            batch=batch, kind="end" if batch == info.batches else "batch", rows_in=hi - lo,
            rows_out=sum(f.num_records for f in steps[batch].staged["output"]),
            late=events["late"], quarantined=events["quarantine"],
            state_rows=state_rows, state_bytes=state_bytes, duration_s=duration_s)
        reports.append(report)
        rows.append({"run_id": info.run_id, "seq_lo": lo, "seq_hi": hi,
                     "state_version": state_version,
                     "output_version": versions[batch], **vars(report)})
    return reports, rows, state_version


def _commit_appends(storage: DeltaStorage, info: RunInfo, kind: str, path: str,
                    schema: pa.Schema, batches: list[int], steps: dict[int, StepFiles],
                    removals: list[str] | None = None,
                    on_commit: Callable[[int], None] | None = None) -> dict[int, int | None]:
    """Commit ``batches`` of the output table in order: the version holding each; the first
    one's commit also removes ``removals`` (when not None, it is made even if empty)."""
    versions = {}
    for batch in batches:
        versions[batch] = commit_files(storage, path, steps[batch].staged[kind], schema,
                                       info.txn(kind, batch), batch_meta(info, batch),
                                       remove=removals, force=removals is not None)[0]
        removals = None
        if on_commit:
            on_commit(batch)
    return versions


def _commit_events(storage: DeltaStorage, info: RunInfo, kind: str, path: str, plan: StepPlan,
                   batches: list[int], steps: dict[int, StepFiles]) -> None:
    """Commit the late or quarantined events of a group's ``batches`` in one commit (app
    transaction version: the last batch's). The workers wrote none of the batches an
    earlier attempt's commit holds already (``plan.events_done``)."""
    if not batches or plan.events_done.get(kind, -1) >= batches[-1]:
        return
    files = [f for batch in batches for f in steps[batch].staged[kind]]
    commit_files(storage, path, files, plan.schemas[kind], info.txn(kind, batches[-1]),
                 batch_meta(info, batches[-1]), need_version=False)


def _commit_states(storage: DeltaStorage, info: RunInfo, path: str, schema: pa.Schema,
                   batches: list[int], steps: dict[int, StepFiles], live: list[LiveFile]
                   ) -> dict[int, tuple[int, int, int]]:
    """Commit the state files of ``batches`` in order, each replacing its buckets' files (a
    file of a group of buckets once every bucket of it has stepped past it): (version, rows,
    bytes) of the state after each batch."""
    after = {}
    for batch in batches:
        step = steps[batch]
        replaced = [f.path for f in live
                    if step.buckets.issuperset(buckets_of_file(f.path, info.buckets))]
        version, skipped = commit_files(storage, path, step.staged["state"], schema,
                                        info.txn("state", batch), batch_meta(info, batch),
                                        remove=replaced)
        live = (storage.live_files(path, version) if skipped
                # an earlier attempt committed this batch's state files: ask the table
                else [f for f in live if f.path not in replaced]
                + [LiveFile(f.path, f.size, f.num_records) for f in step.staged["state"]])
        after[batch] = (version, sum(f.rows for f in live), sum(f.size for f in live))
    return after


def _discard(files: list[StagedFile]) -> None:
    """Delete staged files an earlier attempt's commit made spares (it holds their batches)."""
    for f in files:
        delete_file(f.path)

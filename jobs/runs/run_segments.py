"""Segments of a continued run and the rewind that starts each continuation.

A run's first replay is segment 0; each continuation to a newer recording version adds a segment
(``run.json`` ``segments``). A continuation keeps the batches whose cut points the new version's
plan shares with the run (:func:`kept_batches`) and rewinds the run's tables to the end of the
last kept batch: the output rows of later batches (at least the end-of-input flush, whose rows
were provisional), their late and quarantined events, their manifest rows, and the state is set
back to what it was after the last kept batch. Each rewind commit is a Delta app transaction
(``<run_id>/rewind/<table>``, version = segment), so a rewind interrupted by a crash is finished
by the next attempt (:func:`finish_rewind`) without doing anything twice. The output files of
the rewound batches are removed by the commit of the segment's first batch's output instead (one
Delta commit less per continuation; :func:`output_removals`).
"""

from __future__ import annotations

from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc

from jobs.runs.run_commits import commit_rows
from jobs.runs.run_info import TXN_SCHEME, ReplayError, RunInfo, note_checked
from jobs.runs.run_text import run_text
from jobs.storage import DeltaStorage, LiveFile, StagedFile, Txn
from jobs.storage.delta_log import LoggedCommit
from jobs.storage.locations import exists
from jobs.storage.object_paths import write_whole
from jobs.storage.rearrange import rearranging
from jobs.storage.staging import stage_table
from jobs.warehouse import Warehouse


class RunTables(Protocol):
    """What rewinding a run needs of the runner (:class:`~jobs.runs.replay.Replay`): the
    storage, the warehouse and its cache of the runs' manifests."""

    storage: DeltaStorage
    warehouse: Warehouse

    def manifest(self, run_id: str) -> pa.Table: ...

    def remember_manifest(self, run_id: str, version: int, rows: pa.Table) -> None: ...


def kept_batches(old_cuts: list[int], new_cuts: list[int]) -> int:
    """How many leading batches of a run cut at ``old_cuts`` a plan cut at ``new_cuts`` keeps
    unchanged: the largest ``r`` with ``old_cuts[:r + 1] == new_cuts[:r + 1]`` (at most the
    run's batch count; the end-of-input flush is never kept)."""
    r = 0
    limit = min(len(old_cuts), len(new_cuts)) - 1
    while r < limit and old_cuts[r + 1] == new_cuts[r + 1]:
        r += 1
    return r


def append_only(storage: DeltaStorage, path: str, old: int, new: int,
                commits: list[LoggedCommit] | None, rearranged: bool = True) -> str | None:
    """Why versions ``old+1 .. new`` of the table at ``path`` are not plain appends (a delete,
    an overwrite, an optimize...), or None when every one of them only appended rows (or, when
    ``rearranged``, only rearranged its files: :mod:`jobs.storage.rearrange`). ``commits``:
    those versions' commits (:meth:`~jobs.storage.DeltaStorage.commits`; None when a log entry
    is missing), their commit information and their actions: a commit that removes rows is not
    an append whatever its log's operation says (a writer may label its adds and removes an
    append, as delta-rs and delta-spark label one transaction of both)."""
    if new <= old:
        return None
    if commits is None:
        return (f"versions {old + 1} to {new} of {path} cannot be told apart from a rewrite "
                "(a log entry is missing)")
    for commit in commits:
        entry, gone = commit.info, commit.rows_removed
        if rearranging(storage, entry):
            if rearranged:
                continue
            return f"version {commit.version} of {path} rearranged its files (reprise optimize)"
        operation = str(entry.get("operation", "?"))
        mode = str((entry.get("operationParameters") or {}).get("mode", ""))
        if operation != "WRITE" or mode.lower() != "append":
            what = f"{operation} ({mode})" if mode else operation
            return f"version {commit.version} of {path} is a {what}, not an append"
        if gone:
            return (f"version {commit.version} of {path} removed rows, though its log labels "
                    f"it an append: its data file {gone[0]} is no longer live")
    return None


def save_run(replay: RunTables, info: RunInfo) -> None:
    """Write ``run.json`` atomically (:func:`jobs.runs.run_text.run_text`: one field a line,
    each value compact; JSON's indented form is written by a pure-Python encoder, ten times
    slower)."""
    run_file = replay.warehouse.run_dir(info.run_id) / "run.json"
    text = run_text(run_file, info)
    write_whole(run_file, text)
    note_checked(run_file, text)


def pending(info: RunInfo) -> dict | None:
    """The run's last segment when its rewind is not done yet."""
    if info.segments and not info.segments[-1].get("rewound", True):
        return info.segments[-1]
    return None


def finish_rewind(replay: RunTables, info: RunInfo) -> None:
    """Do (or finish) the rewind of the run's last segment, then mark it done in ``run.json``."""
    segment = pending(info)
    if segment is None:
        return
    rewind(replay, info, int(segment["first_batch"]), int(segment["segment"]),
           int(segment["rewind_seq"]), int(segment["old_total"]))
    segment["rewound"] = True
    save_run(replay, info)


def rewind(replay: RunTables, info: RunInfo, keep: int, segment: int, seq: int,
           old_total: int) -> None:
    """Set the run's tables back to the end of batch ``keep - 1`` (``seq``: the arrival
    sequence where batch ``keep`` starts; ``old_total``: the events the run had read). The
    manifest goes last: until it is rewound, the run is not resumable, and
    :func:`finish_rewind` finishes the job. The output files of the rewound batches stay live
    until the segment's first batch commits its output (:func:`output_removals`), unless
    files must come back too (a file removed since the last kept batch)."""
    storage, run_id = replay.storage, info.run_id
    manifest = replay.manifest(run_id)
    # (the one row needed: the manifest gains rows with every segment)
    last_kept = manifest.slice(keep - 1, 1).to_pylist()[0] if 0 < keep <= manifest.num_rows \
        else None
    meta = {"reprise.run": run_id, "reprise.rewind": str(keep), "reprise.segment": str(segment)}

    def table(kind: str) -> str:
        return replay.warehouse.run_table(run_id, kind)

    def commit(kind: str, add: list[LiveFile], remove: list[str]) -> None:
        path = table(kind)
        if not (add or remove):
            return
        storage.commit_files(path, [StagedFile(f.path, f.size, f.rows) for f in add],
                             storage.schema(path), txn=Txn(f"{run_id}/rewind/{kind}", segment),
                             metadata=meta, remove=remove)

    add, remove = table_diff(replay, info, "output",
                             last_kept["output_version"] if last_kept else None)
    if add:  # (else the segment's first batch removes the files: output_removals)
        commit("output", add, remove)
    commit("state", *table_diff(replay, info, "state",
                                last_kept["state_version"] if last_kept else None))
    for kind in ("late", "quarantine"):  # rows of later batches: arrival at or after ``seq``
        path = table(kind)
        if seq < old_total and storage.exists(path):  # (the flush adds no late events)
            commit(kind, *_events_before(storage, path, seq))
    if manifest.num_rows > keep:  # one commit: the kept rows as a new file, the old ones gone
        path, kept = table("manifest"), manifest.slice(0, keep)
        version, skipped = commit_rows(storage, path, kept,
                                       Txn(f"{run_id}/rewind/manifest", segment), meta,
                                       remove=[f.path for f in storage.live_files(path)])
        if not skipped and version is not None:
            replay.remember_manifest(run_id, version, kept)


def table_diff(replay: RunTables, info: RunInfo, kind: str, version: int | None
               ) -> tuple[list[LiveFile], list[str]]:
    """The files to add back to and to remove from the run's ``kind`` table to make its live
    files those it had at ``version`` (none when None)."""
    storage, path = replay.storage, replay.warehouse.run_table(info.run_id, kind)
    if not storage.exists(path) or version == storage.version(path):
        return [], []  # (the state when only the flush is redone: it commits no state)
    # (a run table's writers never re-add a path: the files live at the latest version and not
    # at ``version`` are those added and not removed since)
    latest = storage.version(path)
    if version is not None and (since := storage.files_changed(path, version, latest)):
        added, removed = since
        if removed <= added:  # nothing live at ``version`` is gone: no snapshot needed
            return [], sorted(added - removed)
    now = set(storage.live_files(path))
    then = set() if version is None else set(storage.live_files(path, version))
    gone = [f.path for f in then - now if not exists(f.path)]
    if gone:
        raise ReplayError(f"run {info.run_id}: cannot rewind {kind} to version {version}: its "
                          f"file {gone[0]} was vacuumed (`reprise gc`); replay the query "
                          "afresh with another --run-id")
    return sorted(then - now), sorted(f.path for f in now - then)


def output_removals(replay: RunTables, info: RunInfo, manifest) -> list[str] | None:
    """The output files of the batches the last segment rewound (at least the provisional
    end-of-input flush's), which the commit of the segment's first batch's output removes, when
    the manifest (``manifest``: its rows) ends at that batch; None otherwise. The rewind
    itself leaves them live (one Delta commit less per continuation): until that commit, done
    once under the batch's app transaction, the run's manifest does not hold the batch, so a
    run resumed after a crash computes the same removals again or finds the commit done."""
    if len(info.segments) < 2 or manifest.num_rows != int(info.segments[-1]["first_batch"]):
        return None
    keep = manifest.num_rows
    version = manifest.column("output_version")[keep - 1].as_py() if keep else None
    return table_diff(replay, info, "output", version)[1]


def _events_before(storage: DeltaStorage, path: str, seq: int) -> tuple[list[LiveFile], list[str]]:
    """The files to add to and to remove from the late or quarantine table at ``path`` so that
    it keeps only the events that arrived before ``seq``. A file holds the events of one job's
    batches: one with events on both sides of ``seq`` is replaced by a file of those before."""
    add, remove = [], []
    for f in storage.live_files(path):
        if not f.rows:
            continue
        arrival = storage.read_file(f.path, ["arrival_seq"]).column("arrival_seq")
        if pc.min(arrival).as_py() >= seq:
            remove.append(f.path)
        elif pc.max(arrival).as_py() >= seq:
            kept = stage_table(storage, path, storage.read_file(f.path).filter(
                pc.less(arrival, seq)))
            add.append(LiveFile(kept.path, kept.size, kept.num_records))
            remove.append(f.path)
    return add, remove


def first_segment(info: RunInfo, note: str = "") -> dict:
    """Segment 0 of a run: its first replay."""
    segment = {"segment": 0, "from_version": None, "to_version": pinned_version(info),
               "first_batch": 0, "batches": info.batches, "events": info.total,
               "rewound": True}
    return {**segment, "note": note} if note else segment


def next_segment(info: RunInfo, cuts: list[int], keep: int, to_version: int) -> dict:
    """The record of the segment that continues ``info`` to the cut points ``cuts`` (pinned at
    ``to_version``), keeping its batches before ``keep``; its rewind is pending."""
    return {"segment": max(1, len(info.segments)), "from_version": pinned_version(info),
            "to_version": to_version, "first_batch": keep, "batches": len(cuts) - 1 - keep,
            "events": max(0, cuts[-1] - info.total), "rewind_seq": cuts[keep],
            "old_total": info.total, "rewound": False, "txn": TXN_SCHEME}


def pinned_version(info: RunInfo) -> int:
    """The pinned version of a single-input run (the first input's for SPJ)."""
    return next(iter((info.sources or {"input": info.input_version}).values()))


def describe(segment: dict) -> str:
    """One line about a segment, e.g. ``segment 1: v3 -> v5, batches 7-9, 20,000 events`` (a
    run of several recordings: ``segment 1: up to ads@v4, ad_campaigns@v2, ...``)."""
    start = "start" if segment.get("from_version") is None else f"v{segment['from_version']}"
    first, count = int(segment["first_batch"]), int(segment["batches"])
    span = f"batches {first}-{first + count - 1}" if count else "no new batch"
    sources = segment.get("sources") or {}
    versions = ("up to " + ", ".join(f"{name}@v{version}" for name, version in sources.items())
                if len(sources) > 1 else f"{start} -> v{segment['to_version']}")
    return (f"segment {segment['segment']}: {versions}, {span}, "
            f"{int(segment['events']):,} new events")


__all__ = ["RunTables", "append_only", "describe", "finish_rewind", "first_segment",
           "kept_batches", "output_removals", "pending", "pinned_version", "rewind", "save_run",
           "table_diff"]

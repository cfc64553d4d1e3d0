"""``replay QUERY --continue``: extend a query's latest run to the recording's latest version,
instead of replaying the whole history again (a run that was interrupted, by a kill mid-way
through a continuation or a replay, is finished first: to the versions it had planned; the next
continuation goes further).

The continued run keeps its id. Its ``run.json`` gets the new version's input files and the batch
plan's cut points over the whole new input (exactly those a fresh replay at that version would
have), and a segment record (:mod:`jobs.runs.run_segments`). The batches whose cut points did not
change
are kept; the run is rewound to the end of the last of them (at least the end-of-input flush is
redone: its output was provisional) and the runner goes on from the state it held there. A
recording whose history between the two versions is not append-only, a query definition that
changed, or (SPJ) new events that the merged input would order before events already merged,
cannot be continued: a fresh run is made instead, with the reason logged and kept in its
``run.json`` (a fresh run that exists already, made by an earlier replay, is resumed as it was
made).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import pyarrow as pa

from engine import batch_plans as plans
from jobs.execution.arrival import resolve_cuts, sequenced
from jobs.execution.merged_inputs import input_merge, merged_events
from jobs.runs.listing import newest_run, summarize
from jobs.runs.pipeline_stage import stage_over
from jobs.runs.replay import Replay, run_id_of
from jobs.runs.run_commits import BatchReport
from jobs.runs.run_info import (
    ReplayError,
    RunInfo,
    fingerprint,
    read_run,
)
from jobs.runs.run_lock import run_lock
from jobs.runs.run_segments import (
    append_only,
    first_segment,
    kept_batches,
    next_segment,
    pending,
    save_run,
)
from jobs.runs.stage_continuation import extend_stage, stage_run_over
from jobs.storage import DeltaStorage
from jobs.storage.delta_log import LoggedCommit, appended_files
from jobs.storage.locations import local_path
from jobs.storage.log_entries import relative_path
from jobs.storage.rearrange import rearranged_files


@dataclass
class Continuation:
    """What a continuation did: the run, its new segment (None when the recording had no new
    version) and, when a fresh run was made instead, why."""

    info: RunInfo
    segment: dict | None
    fresh_reason: str = ""
    manifest: pa.Table | None = None
    #: The run was complete when the segment was planned: no attempt left staged files behind.
    clean: bool = False
    #: The run was interrupted (its last segment, or its first replay, not done): this
    #: continuation finishes it to the versions it planned and plans no new segment.
    resumed: bool = False


def run_to_continue(replay: Replay, query: str, plan: str | None = None) -> str | None:
    """The id of the run a continuation of ``query`` extends: among the runs with the query's
    current definition and ``plan`` (default: the query's plan), the one over the newest input
    versions (then the newest made), complete or not. An interrupted run (a continuation or a
    replay that was killed) is among them: the continuation finishes it first, to the versions
    it planned, and the next one goes further. Only the runs' headers are read
    (:func:`~jobs.runs.listing.newest_run`); the continuation reads the chosen run whole,
    under its lock."""
    ctx = replay.context(query)
    fp = fingerprint(ctx.query, ctx.operator)
    wanted = (plans.parse_plan(plan) if plan is not None else ctx.query.batch).describe()
    return newest_run(replay.warehouse, lambda _, head: (head.query, head.fingerprint, head.plan)
                      == (query, fp, wanted))


def continue_query(replay: Replay, query: str, plan: str | None = None,
                   run_id: str | None = None, log: Callable[[str], None] = print,
                   on_batch: Callable[[BatchReport], None] | None = None) -> Continuation:
    """Continue ``run_id`` (default: :func:`run_to_continue`) to the latest recording versions
    and run the new batches (an interrupted run: finish it first, to the versions it planned);
    without a run to continue, replay from scratch. A pipeline stage: its upstream is
    continued, then the stage replays over the continued run's output
    (:func:`continue_stage`)."""
    if replay.context(query).query.upstream is not None:
        return continue_stage(replay, query, plan, run_id, log, on_batch)
    if run_id is None:
        run_id = run_to_continue(replay, query, plan)
    else:
        head = read_run(replay.warehouse, run_id)
        if head.query != query:
            raise ReplayError(f"run {run_id!r} is a run of query {head.query!r}, not {query!r}")
        if plan is not None and plans.parse_plan(plan).describe() != head.plan:
            raise ReplayError(f"run {run_id!r} uses plan {head.plan!r}, not {plan!r}")
    if run_id is None:
        log(f"{query}: no completed run to continue; replaying from scratch")
        result = Continuation(replay.prepare(query, plan=plan), None, "no completed run")
    else:
        result = extend(replay, run_id, log)
    # (the new batches run where jobs.runs.engine_choice says: few events, the driver)
    result.manifest = replay.run(result.info, on_batch, clean=not result.clean)
    return result


def extend(replay: Replay, run_id: str, log: Callable[[str], None] = print) -> Continuation:
    """Plan the next segment of run ``run_id`` (under the run's lock) and write it to
    ``run.json``; or, when the run cannot be continued, prepare a fresh run (or take the
    existing one of that id) and say why."""
    with run_lock(replay.warehouse.run_dir(run_id), run_id):
        info = read_run(replay.warehouse, run_id)
        if pending(info) or replay.manifest(info.run_id).num_rows != info.batches + 1:
            log(f"{info.run_id}: interrupted; finishing it (to v{info.input_version}), the next "
                "continuation goes further")
            return Continuation(info, info.segments[-1] if info.segments else None,
                                resumed=True)
        ctx = replay.context(info.query)
        # (pinned first: the check covers exactly the versions the new segment reads, however
        # many commits land meanwhile)
        sources = replay.pin_sources(ctx.query, None)
        old = info.sources or {"input": info.input_version}
        logs = {stream: replay.storage.commits(replay.warehouse.recording(name), old[stream] + 1,
                                               sources[stream])
                for stream, name in ctx.query.inputs.items()}  # (read once, for both uses)
        reason = _fresh_reason(replay, info, ctx, sources, logs)
        if not reason and sources == old:
            return Continuation(info, None, clean=True)
        if not reason and ctx.merged:
            reason = _merge_order_problem(replay, info, ctx, sources)
        if not reason:
            try:  # (nothing is written before the new files are known)
                return Continuation(info, _next_segment(replay, info, ctx, sources, old,
                                                        logs), clean=True)
            except RecordingRewritten as exc:  # (new_files: a file the run read is gone)
                reason = f"recording {ctx.query.input!r} was rewritten: {exc}"
    fresh_id = replay.default_run_id(info.query, plan=info.plan)
    if fresh_id == info.run_id:
        raise ReplayError(f"run {info.run_id!r} cannot be continued ({reason}) and a fresh run "
                          "would take the same id; remove it or choose another --run-id")
    if (replay.warehouse.run_dir(fresh_id) / "run.json").exists():
        # (made by an earlier replay: its run.json says how, and is left as it is)
        status = summarize(replay.warehouse, fresh_id).status
        log(f"{info.run_id}: cannot be continued ({reason}); a fresh replay of {info.query} "
            f"would be run {fresh_id}, which exists ({status}): "
            + ("nothing to do" if status == "complete" else "resuming it"))
        fresh = replay.prepare(info.query, plan=info.plan, run_id=fresh_id)
        return Continuation(fresh, None, reason)
    log(f"{info.run_id}: cannot be continued ({reason}); replaying {info.query} from scratch")
    fresh = replay.prepare(info.query, plan=info.plan, run_id=fresh_id)
    fresh.segments = [first_segment(fresh, note=f"fresh run instead of continuing "
                                                 f"{info.run_id}: {reason}")]
    save_run(replay, fresh)
    return Continuation(fresh, fresh.segments[0], reason)


def _fresh_reason(replay: Replay, info: RunInfo, ctx, sources: dict[str, int],
                  logs: dict[str, list[LoggedCommit] | None]) -> str:
    """Why the run cannot be continued to the pinned versions ``sources`` of its recordings
    ("" when it can): the versions after the run's up to those are checked, no later ones
    (``logs``: their commits, by stream)."""
    if fingerprint(ctx.query, ctx.operator) != info.fingerprint:
        return f"the definition of query {info.query!r} changed since the run was made"
    old = info.sources or {"input": info.input_version}
    for stream, name in ctx.query.inputs.items():
        path = replay.warehouse.recording(name)
        latest = sources[stream]
        if latest < old[stream]:
            return f"recording {name!r} is at version {latest}, older than the run's {old[stream]}"
        # (a merged input takes the files of later commits for new events: not rearranged)
        if why := append_only(replay.storage, path, old[stream], latest, logs[stream],
                              not ctx.merged):
            return f"recording {name!r} was rewritten: {why}"
    return ""


def _merge_order_problem(replay: Replay, info: RunInfo, ctx, sources: dict[str, int]) -> str:
    """Why appending the new events to the run's merged input would not give the merged input
    of a fresh replay: a new event that the merge order (event time, then stream) puts before
    the last event already merged ("" when there is none)."""
    old = info.sources
    new = merged_events(replay.storage, replay.warehouse, replay.catalog, ctx.query, sources,
                        ctx.recording, after=old)
    merge = input_merge(replay.catalog, ctx.query)
    time_column, stream = merge.time_column, merge.stream_column
    first = new.select(time_column, stream, "__order").first()
    if first is None or info.total == 0:
        return ""
    last = sequenced(replay.storage, info.input_path, info.input_version, info.files,
                     info.total - 1, info.total, time_column).select(time_column, stream).first()
    streams = list(ctx.query.inputs)

    def key(time, order: int) -> tuple:
        return (0, 0, order) if time is None else (1, time.timestamp(), order)

    if key(first[0], first[2]) < key(last[0], streams.index(last[1])):
        return (f"a new event of stream {first[1]!r} at {first[0]} precedes the last merged "
                f"event ({last[1]!r} at {last[0]}) in the merged input's event-time order")
    return ""


class RecordingRewritten(ReplayError):
    """Files a run read are no longer live in a later version of its recording."""


def new_files(storage: DeltaStorage, path: str, old: int, new: int, known: list[dict],
              commits: list[LoggedCommit] | None) -> list[dict]:
    """The data files versions ``old+1 .. new`` of the table at ``path`` added, in arrival order
    (commit version, then path; as :func:`jobs.execution.arrival.input_index` orders a snapshot),
    with offsets after the ``known`` files, from those versions' ``commits`` (their log entries
    only, not the snapshot, whose file list grows with every commit; None when one is missing);
    checks that they removed none of the known files (the history was append-only)."""
    if new <= old:
        return []
    if commits is None:
        raise ReplayError(f"cannot tell which versions of {path} between {old} and {new} added "
                          "its new files (a log entry is missing or unreadable); replay afresh")
    added, removed = appended_files(commits)
    uris = {f["uri"] for f in known}
    if gone := uris & removed:
        raise RecordingRewritten(f"the input files of version {old} of {path} are no longer "
                                 f"live at version {new} (e.g. {sorted(gone)[0]})")
    fresh = sorted((u for u in added if u not in uris and u not in removed),
                   key=lambda u: (added[u][0], u))
    files: list[dict] = []
    offset = sum(f["rows"] for f in known)
    for uri in fresh:
        version, rows = added[uri]
        if rows is None:
            rows = storage.file_rows(uri)
        files.append(asdict(plans.InputFile(uri=uri, commit_version=version, rows=rows,
                                            offset=offset)))
        offset += rows
    return files


def moved_files(storage: DeltaStorage, path: str, known: list[dict],
                commits: list[LoggedCommit] | None) -> list[dict]:
    """The ``known`` files (of a version of the table at ``path``) as the last of the later
    ``commits`` holds them: a file that one of them rearranged (:mod:`jobs.storage.rearrange`:
    the same rows, the same arrival order) is its replacement, at the same offset."""
    moved = rearranged_files(storage, commits or [])
    if not moved:
        return known
    root = local_path(path).rstrip("/")
    out = []
    for f in known:
        now = moved.get(relative_path(f["uri"], root))
        out.append(f if now is None else {**f, "uri": f"{root}/{now}"})
    return out


def _next_segment(replay: Replay, info: RunInfo, ctx, sources: dict[str, int],
                  old: dict[str, int], logs: dict[str, list[LoggedCommit] | None]) -> dict:
    """Extend ``info`` to ``sources`` (new files and cuts, a pending segment) in ``run.json``
    (``logs``: the recordings' commits after ``old`` up to ``sources``, by stream)."""
    k = max(1, len(info.segments))
    if ctx.merged:
        from jobs.execution.merged_inputs import merge_inputs, merged_versions

        # an attempt killed after merging the segment's events and before recording it here
        # planned these versions: the segment goes to them (the next one goes further)
        sources = merged_versions(replay.storage, info.input_path, info.run_id, k) or sources
        version = merge_inputs(replay.storage, replay.warehouse, replay.catalog, ctx.query,
                               sources, ctx.recording, info.input_path, info.run_id,
                               info.buckets, segment=k, after=old)
        path = info.input_path  # (the run's own table: its log read here)
        commits = replay.storage.commits(path, info.input_version + 1, version)
    else:
        path, version, commits = info.input_path, sources["input"], logs["input"]
    known = moved_files(replay.storage, path, info.files, commits)
    files = [*known, *new_files(replay.storage, path, info.input_version, version, known,
                                commits)]
    cuts = resolve_cuts(plans.parse_plan(info.plan), [plans.InputFile(**f) for f in files],
                        ctx.time_column)
    keep = kept_batches(info.cuts, cuts)
    segments = info.segments or [first_segment(info)]
    segment = {**next_segment(info, cuts, keep, next(iter(sources.values()))),
               "sources": sources}
    info.segments = [*segments, segment]
    info.cuts, info.files, info.input_version, info.sources = cuts, files, version, (
        sources if info.sources else {})
    save_run(replay, info)
    return segment


__all__ = ["Continuation", "continue_query", "extend", "run_to_continue"]


def continue_stage(replay: Replay, query: str, plan: str | None, run_id: str | None,
                   log: Callable[[str], None] = print,
                   on_batch: Callable[[BatchReport], None] | None = None) -> Continuation:
    """``--continue`` of a pipeline stage: continue its upstream (stage by stage, the first
    one over the recording's new commits), then continue the stage's run that read the
    upstream run over its new output rows (:mod:`jobs.runs.stage_continuation`); without one
    (or ``run_id`` given, or the upstream replayed afresh instead of continued), run the stage
    over the upstream run's whole output. Either gives the tables of a fresh replay of the
    chain."""
    ctx = replay.context(query)
    assert ctx.query.upstream is not None
    upstream = continue_query(replay, ctx.query.upstream.query.name, plan, None, log)
    previous = (stage_run_over(replay, ctx, upstream.info)
                if run_id is None and not upstream.fresh_reason else None)
    if previous is not None:
        info = extend_stage(replay, ctx, previous, upstream.info)
        log(f"{query}: run {info.run_id} continued over run {upstream.info.run_id} of "
            f"{ctx.query.upstream.query.name}")
        manifest = replay.run(info, on_batch, clean=False)
        return Continuation(info, info.segments[-1] if info.segments else None, "", manifest)
    info = stage_over(replay, ctx, upstream.info, run_id, run_id_of)
    log(f"{query}: replaying over run {upstream.info.run_id} of "
        f"{ctx.query.upstream.query.name} (continued)")
    manifest = replay.run(info, on_batch)
    return Continuation(info, upstream.segment, upstream.fresh_reason, manifest)

"""Fused pipeline stages: a stage and its upstream run in the same tasks (the exchange law).

A stage whose upstream reads a recording and which keeps the upstream's key, without derived
columns of its own, is *fused* with it when the upstream's run is not complete yet (a complete
one is reused, and the stage runs over its output as before: :mod:`jobs.runs.pipeline_stage`).
Each group of batches is then one Spark job of the upstream's bucket tasks
(:mod:`jobs.execution.fused_steps`), which hand back their output rows as they write them; those
rows are the stage's batches, stepped right away, with no intermediate table written or read
back and no second exchange. Each stage keeps its own run (tables, manifest, run id; the ids
and tables of the separate path): the driver commits the upstream's batches of a group, then
the stage's, each with its per-batch app transactions and its manifest last.

A crash between the two leaves the upstream ahead: the next group starts at the stage's next
batch, steps the upstream again from its state before that batch (its commits of those
batches are found done and skipped) and feeds the stage. The stage's cut points are the running
sums of the upstream manifest's ``rows_out``, known batch by batch; its ``run.json`` records
them (with its input files) when the chain is complete, until then zeros and ``fused_with``
naming the upstream run. Then the stage's input table is written from the upstream's output, as
the separate path writes it before running: it is the record of what the stage read, which
``reprise validate`` checks the stage against.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Protocol

import pyarrow as pa

from engine import batch_plans as plans
from engine.operator import KeyedOperator
from engine.specs import QuerySpec
from jobs.execution.arrival import input_index, overlapping
from jobs.execution.derived_columns import WorkerDerive, in_workers
from jobs.execution.direct_exchange import execute_finish, per_task, task_groups
from jobs.execution.fused_steps import (
    EMITTED,
    emitted_tables,
    group_output,
    stage_part,
    upstream_part,
)
from jobs.execution.step_files import collect_files
from jobs.execution.step_plan import StepFiles, StepPlan
from jobs.runs.engine_choice import engine_for, note_engine
from jobs.runs.lifecycle import RunProgress, run_lifecycle
from jobs.runs.pipeline_stage import Replay, reading, stage_cuts, stage_over, write_stage_input
from jobs.runs.run_commits import BatchReport
from jobs.runs.run_context import RunContext
from jobs.runs.run_info import ReplayError, RunInfo, existing_run, fingerprint
from jobs.runs.run_segments import save_run
from jobs.storage import LiveFile


class Runner(Replay, Protocol):
    """What a fused run needs of the runner (:class:`~jobs.runs.replay.Replay`)."""

    engine: str
    batches_per_job: int

    def context(self, query_name: str) -> RunContext: ...

    def group_of(self, info: RunInfo, first: int) -> list[int]: ...

    def tables(self, info: RunInfo) -> dict[str, str]: ...

    def bounds(self, info: RunInfo, group: list[int]) -> dict[int, tuple[int, int]]: ...

    def step_plan(self, info: RunInfo, ctx: RunContext, op: KeyedOperator, group: list[int],
                  state_version: int | None, attempt: str, derive: WorkerDerive | None = None
                  ) -> tuple[StepPlan, list[LiveFile]]: ...

    def commit(self, info: RunInfo, plan: StepPlan, group: list[int],
               steps: dict[int, StepFiles], live: list[LiveFile], state_version: int | None,
               started: float, removals: list[str] | None = None
               ) -> tuple[list[BatchReport], int | None]: ...

    def remember_manifest(self, run_id: str, version: int, rows: pa.Table) -> None: ...


def fusable(query: QuerySpec) -> bool:
    """Whether the stage ``query`` can run fused with its upstream: the upstream reads a
    recording, the stage keeps its key and derives no column of its own."""
    upstream = query.upstream
    return (upstream is not None and upstream.query.upstream is None
            and upstream.stream.key is not None
            and (query.key or upstream.stream.key) == upstream.stream.key
            and not query.derived)


def prepare_stage(replay: Runner, ctx: RunContext, plan: str | None, run_id: str | None,
                  version: int | None,
                  make_id: Callable[[str, dict[str, int], plans.BatchSpec, str], str]
                  ) -> RunInfo:
    """The run of the stage ``ctx`` at the pinned version and plan: fused with its upstream's
    run when it can be and that run is not complete (:meth:`FusedChain.run` runs both), else
    over the upstream's complete run (replayed first, or reused: ``stage_over``);
    ``make_id(query, sources, spec, fp)`` is the default run id."""
    assert ctx.query.upstream is not None
    upstream = replay.prepare(ctx.query.upstream.query.name, plan, None, version)
    fused = fused_stage(replay, ctx, upstream, run_id, make_id)
    if fused is not None:
        return fused
    replay.run(upstream)
    return stage_over(replay, ctx, upstream, run_id, make_id)


def complete(replay: Runner, info: RunInfo) -> bool:
    """Whether every batch of ``info`` (its end-of-input flush too) is committed."""
    return replay.manifest(info.run_id).num_rows == info.batches + 1


def fused_stage(replay: Runner, ctx: RunContext, upstream: RunInfo, run_id: str | None,
                make_id: Callable[[str, dict[str, int], plans.BatchSpec, str], str]
                ) -> RunInfo | None:
    """The stage's run fused with ``upstream``'s (made, or an unfinished one loaded), or None
    when the stage runs over the upstream's complete run instead."""
    query = ctx.query
    assert query.upstream is not None
    fp = fingerprint(query, ctx.operator)
    if run_id is None:
        run_id = make_id(query.name, upstream.sources, plans.parse_plan(upstream.plan),
                         reading(fp, upstream.run_id))
    info = existing_run(replay.warehouse.run_dir(run_id) / "run.json", query.name, fp)
    if info is not None:
        if info.fused_with and info.fused_with != upstream.run_id:
            raise ReplayError(f"run {run_id!r} runs fused with run {info.fused_with!r} of "
                              f"query {query.upstream.query.name!r}, not {upstream.run_id!r}; "
                              "choose another --run-id")
        return info if info.fused_with else None
    if (not fusable(query) or upstream.exchange != "direct" or upstream.segments
            or complete(replay, upstream)):
        return None
    info = RunInfo(run_id=run_id, query=query.name, fingerprint=fp,
                   recording=query.upstream.query.name,
                   input_path=replay.warehouse.run_table(run_id, "input"), input_version=0,
                   plan=upstream.plan, cuts=[0] * (upstream.batches + 2), files=[],
                   buckets=upstream.buckets,
                   operator=f"{ctx.operator.name}@{ctx.operator.version}",
                   query_spec=query.raw, sources=dict(upstream.sources), exchange="direct",
                   created=datetime.now(UTC).isoformat(timespec="seconds"),
                   bucketing=upstream.bucketing, fused_with=upstream.run_id)
    replay.warehouse.run_dir(run_id).mkdir(parents=True, exist_ok=True)
    save_run(replay, info)
    return info


def cuts_so_far(replay: Runner, upstream: RunInfo, stage: RunInfo) -> list[int]:
    """The stage's cut points as far as the upstream's committed batches give them (the
    running sum of their ``rows_out``), the rest equal to the last one known."""
    counts = replay.manifest(upstream.run_id).sort_by("batch").column("rows_out").to_pylist()
    known = [0, *itertools.accumulate(counts)]
    return known + [known[-1]] * (stage.batches + 1 - len(known))


@dataclass
class FusedRuns:
    """The fused strategy of the run lifecycle: an upstream run and its stage's run, each group
    of batches one job of the upstream's tasks, the stage stepped over their output."""

    replay: Runner
    upstream: RunInfo
    stage: RunInfo

    @property
    def runs(self) -> list[RunInfo]:
        """The upstream's run and the stage's."""
        return [self.upstream, self.stage]

    def save_stage(self) -> None:
        """The stage's ``run.json`` while it runs: its cut points not recorded yet (zeros:
        it has no input files until the chain is complete)."""
        save_run(self.replay, replace(self.stage, cuts=[0] * len(self.stage.cuts)))

    def run_group(self, group: list[int], members: list[RunProgress]
                  ) -> dict[str, list[BatchReport]]:
        """Run and commit the group of batches starting at ``group[0]`` of the members (the
        stage, and the upstream unless it is ahead)."""
        replay, up, st = self.replay, self.upstream, self.stage
        at = {p.info.run_id: p for p in members}
        first, mine = group[0], at[st.run_id]
        started = time.perf_counter()  # manifest bookkeeping only
        attempt = uuid.uuid4().hex[:8]
        st.cuts = cuts_so_far(replay, up, st)
        sctx = replay.context(st.query)
        if first > up.batches:  # the stage's own end-of-input flush
            plan, live = replay.step_plan(st, sctx, sctx.operator, [first], mine.state_version,
                                          attempt)
            steps = execute_finish(None, plan)
            reports, _ = replay.commit(st, plan, [first], steps, live, mine.state_version,
                                       started, mine.removals)
            self.save_stage()
            return {st.run_id: reports}
        ups = at.get(up.run_id)
        ugroup = replay.group_of(up, first)
        sgroup = ugroup + ([st.batches] if ugroup[-1] == up.batches else [])
        state = ups.state_version if ups else self.upstream_state(first)
        uctx = replay.context(up.query)
        uplan, ulive = replay.step_plan(up, uctx, uctx.operator, ugroup, state, attempt,
                                        in_workers(uctx, up.files))
        splan, slive = replay.step_plan(st, sctx, sctx.operator, sgroup, mine.state_version,
                                        attempt)
        lo, hi = uplan.batches[0][1], uplan.batches[-1][2]
        choice = engine_for(replay.engine, replay.spark, up, uctx, first, replay.batches_per_job)
        files = overlapping(up.files, lo, hi)
        if choice.engine == "spark":  # a task per group of buckets, as the upstream's own run
            rows = per_task(replay.spark, task_groups(replay.spark, up.buckets),
                            lambda group: upstream_part(uplan, files, up.buckets, group))
            tables = emitted_tables(rows)
            rows = [r for r in rows if r["kind"] != EMITTED]
        else:
            tables = []
            rows = upstream_part(uplan, files, up.buckets, range(up.buckets),
                                 tables).to_dict("records")
        stage_rows = stage_part(uplan, splan, sctx.query, group_output(uplan, tables),
                                st.cuts[first]).to_dict("records")
        reports = {}
        if ups is not None:
            steps = collect_files(uplan, rows)
            up.input_bytes += sum(s.bytes_read for s in steps.values())
            reports[up.run_id], _ = replay.commit(up, uplan, ugroup, steps, ulive, state,
                                                  started, ups.removals)
            note_engine(up, ugroup, choice)
            save_run(replay, up)
        st.cuts = cuts_so_far(replay, up, st)
        splan = replace(splan, batches=tuple((b, *replay.bounds(st, [b])[b]) for b in sgroup))
        steps = collect_files(splan, stage_rows)
        reports[st.run_id], _ = replay.commit(st, splan, sgroup, steps, slive,
                                              mine.state_version, started, mine.removals)
        note_engine(st, sgroup, choice)
        self.save_stage()
        return reports

    def upstream_state(self, first: int) -> int | None:
        """The upstream's state version before its batch ``first`` (committed already)."""
        if first == 0:
            return None
        manifest = self.replay.manifest(self.upstream.run_id).sort_by("batch")
        return manifest.column("state_version")[first - 1].as_py()


def run_fused(replay: Runner, stage: RunInfo,
              on_batch: Callable[[RunInfo, BatchReport], None] | None = None) -> pa.Table:
    """Run (or resume) the stage's run ``stage`` fused with its upstream's run (see the module
    docstring), then record its cut points and input; returns the stage's manifest."""
    upstream = existing_run(replay.warehouse.run_dir(stage.fused_with) / "run.json",
                            stage.recording, _fingerprint_of(replay, stage.recording))
    if upstream is None:
        raise ReplayError(f"run {stage.run_id!r} runs fused with run {stage.fused_with!r}, "
                          "which is gone; replay the query with another --run-id")
    manifests = run_lifecycle(replay, FusedRuns(replay, upstream, stage), on_batch=on_batch)
    ctx = replay.context(stage.query)
    stage.input_version = write_stage_input(replay, ctx.query, upstream, stage.input_path,
                                            stage.run_id)
    stage.files = [asdict(f) for f in input_index(replay.storage, stage.input_path,
                                                  stage.input_version)]
    stage.cuts = stage_cuts(replay, upstream)
    if stage.cuts[-1] != sum(f["rows"] for f in stage.files):
        raise ReplayError(f"run {stage.run_id!r}: the upstream's manifest counts "
                          f"{stage.cuts[-1]} output rows but its output table holds "
                          f"{sum(f['rows'] for f in stage.files)}; replay the query with "
                          "another --run-id")
    stage.fused_with = ""
    save_run(replay, stage)
    return manifests[stage.run_id]


def _fingerprint_of(replay: Runner, query_name: str) -> str:
    ctx = replay.context(query_name)
    return fingerprint(ctx.query, ctx.operator)


def chain_plan(query: QuerySpec) -> dict:
    """``reprise plan STAGE --json``: the stages of ``query``'s chain in the order they run,
    what each reads (with key and event-time columns) and whether it runs fused with its
    upstream (:func:`fusable`: in the same tasks, when the upstream's run is not complete
    yet); ``fused``: the fused pairs (upstream, stage)."""
    stages = [{"query": q.name, "kind": q.kind, "reads": q.input,
               "reads_kind": "recording" if q.upstream is None else "query",
               "key": q.key, "time": q.time, "fused_with_upstream": fusable(q)}
              for q in query.chain]
    fused = [[q.upstream.query.name, q.name] for q in query.chain
             if q.upstream is not None and fusable(q)]
    return {"query": query.name, "stages": stages, "fused": fused}


def chain_plan_text(plan: dict) -> list[str]:
    """The lines of ``reprise plan STAGE``."""
    lines = [f"pipeline of {plan['query']}: {len(plan['stages'])} stages, run in this order"]
    for number, stage in enumerate(plan["stages"], 1):
        reads = f"{stage['reads_kind']} {stage['reads']}"
        how = ("" if stage["reads_kind"] == "recording" else
               "; fused: runs in its upstream's jobs, batch by batch over the output rows "
               "its tasks hand back (while its upstream's run is not complete)"
               if stage["fused_with_upstream"] else
               "; not fused: runs after its upstream's run, over its own run's input table")
        lines.append(f"  {number}. {stage['query']} ({stage['kind']}) reads {reads}, key "
                     f"{stage['key']}, time {stage['time']}{how}")
    return lines

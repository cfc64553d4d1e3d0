"""Fused pipeline stages: a chain of stages run in the same tasks (the exchange law).

A stage that keeps its upstream's key, without derived columns of its own, whose upstream reads
a recording or is itself fused, is *fused* with it when the upstream's run is not complete yet
(a complete one is reused, and the stage runs over its output as before:
:mod:`jobs.runs.pipeline_stage`); so a chain of any length that keeps one key (window ->
window -> QRE, ...) runs as one. Each group of batches is then one Spark job of the first
run's bucket tasks (:mod:`jobs.execution.fused_steps`), which hand back their output rows as
they write them; those rows are the next stage's batches, stepped right away, whose output rows
are the batches of the stage after it, and so on, with no intermediate table written or read
back and no second exchange. Each stage keeps its own run (tables, manifest, run id; the ids
and tables of the separate path): the driver commits the group's batches of each run in chain
order, each with its per-batch app transactions and its manifest last, as soon as the run has
stepped them (a run whose last batch is in has its tables checkpointed in the background while
the stages after it step: :class:`~jobs.runs.lifecycle.Checkpoints`).

A crash between two commits leaves the runs before it ahead: the next group starts at the
next batch of the runs furthest behind, steps the runs ahead again from their state before
that batch (their commits of those batches are found done and skipped) and feeds the stages
after them. A stage's cut points are the running sums of its upstream manifest's
``rows_out``, known batch by batch; its ``run.json`` records them (with its input files) when
the chain is complete, until then zeros and ``fused_with`` naming the upstream run.

Each stage's input table (the record of what it read, which ``reprise validate`` checks the
stage against) gets the rows the stage stepped, group by group, from memory: after its
upstream's commit of the group and before its own, one append (an app transaction whose
version is the last upstream batch it holds, so a group run again appends only the batches
after it) of the upstream's output rows of the group in emission order: the table the
separate path writes from the upstream's output before it runs, in one file per group.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import Protocol

import pyarrow as pa

from engine import batch_plans as plans
from engine.operator import KeyedOperator
from engine.specs import QuerySpec
from jobs.execution.arrival import input_index, overlapping
from jobs.execution.derived_columns import WorkerDerive, in_workers
from jobs.execution.direct_exchange import per_task, task_groups
from jobs.execution.fused_steps import (
    EMITTED,
    StageInput,
    emitted_tables,
    group_output,
    plain,
    stage_part,
    upstream_part,
)
from jobs.execution.step_files import collect_files
from jobs.execution.step_plan import StepFiles, StepPlan
from jobs.runs.engine_choice import EngineChoice, engine_for, note_engine
from jobs.runs.lifecycle import RunProgress, run_lifecycle
from jobs.runs.pipeline_stage import (
    Replay,
    append_stage_input,
    fused_input_batch,
    reading,
    stage_cuts,
    stage_over,
)
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
    """Whether the stage ``query`` can run fused with its upstream: the stage keeps its
    upstream's key and derives no column of its own, and its upstream reads a recording or
    can run fused with its own upstream (so a whole chain runs as one)."""
    upstream = query.upstream
    return (upstream is not None and upstream.stream.key is not None
            and (query.key or upstream.stream.key) == upstream.stream.key
            and not query.derived
            and (upstream.query.upstream is None or fusable(upstream.query)))


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
            or not (upstream.fused_with or query.upstream.query.upstream is None)
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
    """The fused strategy of the run lifecycle: a chain of runs, the first reading its input
    files (a recording) and each next one fused with the one before; each group of batches one
    job of the first run's tasks, each stage stepped over the output of the one before."""

    replay: Runner
    chain: list[RunInfo]

    @property
    def runs(self) -> list[RunInfo]:
        """The runs of the chain, the first one first."""
        return list(self.chain)

    def save_stage(self, stage: RunInfo) -> None:
        """A stage's ``run.json`` while it runs: its cut points not recorded yet (zeros: it
        has no input files until the chain is complete)."""
        save_run(self.replay, replace(stage, cuts=[0] * len(stage.cuts)))

    def run_group(self, group: list[int], members: list[RunProgress]
                  ) -> dict[str, list[BatchReport]]:
        """Run and commit the group of batches starting at ``group[0]`` of the members (runs of
        the chain; the chain's runs before the last member that are ahead of it are stepped
        again from their state before that batch, not committed)."""
        replay, chain = self.replay, self.chain
        at = {p.info.run_id: p for p in members}
        first = group[0]
        started = time.perf_counter()  # manifest bookkeeping only
        attempt = uuid.uuid4().hex[:8]
        deepest = max(i for i, info in enumerate(chain) if info.run_id in at)
        for before, stage in itertools.pairwise(chain):
            stage.cuts = cuts_so_far(replay, before, stage)
        root = chain[0]
        # the first run stepped: the chain's first, or (past its last batch) the stage whose
        # own end-of-input flush comes next, those before it done
        begin = max(0, first - root.batches)
        reports: dict[str, list[BatchReport]] = {}
        commit = partial(self.commit, at, started, reports)
        choice: EngineChoice | None = None
        if begin == 0:
            steps, emitted, choice = self.root_part(first, attempt, at)
            feed: tuple[int, ...] = tuple(steps[2])
            commit(0, steps, choice)
        else:
            before = replay.context(chain[begin - 1].query).operator.output_schema
            emitted, feed = plain(before.append(pa.field("batch", pa.int64())).empty_table()), ()
        for i in range(max(begin, 1), deepest + 1):
            stage, ctx = chain[i], replay.context(chain[i].query)
            flush = root.batches + i if not feed or feed[-1] == root.batches + i - 1 else None
            sgroup = [*feed, *([] if flush is None else [flush])]
            state = self.state_before(stage, first, at)
            splan, slive = replay.step_plan(stage, ctx, ctx.operator, sgroup, state, attempt)
            sink: list[pa.Table] | None = [] if i < deepest else None
            given = StageInput.of(ctx.query, emitted)
            rows = stage_part(feed, flush, splan, given, stage.cuts[first], sink
                              ).to_dict("records")
            commit(i, (splan, slive, sgroup, rows, state), choice,
                   (given, feed[-1]) if feed else None)
            if sink is not None:
                emitted, feed = group_output(splan, sink), tuple(sgroup)
        return reports

    def commit(self, at: dict[str, RunProgress], started: float,
               reports: dict[str, list[BatchReport]], i: int,
               steps: tuple[StepPlan, list[LiveFile], list[int], list[dict], int | None],
               choice: EngineChoice | None, given: tuple[StageInput, int] | None = None
               ) -> None:
        """Commit the group of the chain's ``i``-th run (a member of the group: ``at``) as it
        was stepped (``steps``: its plan, live state files, batches, file rows and state
        version before), right after its steps and before the next run's (its checkpoints,
        once its last batch is in, are written while the runs after it step); a stage's input
        rows ``given`` (with the upstream's last batch of the group) first. Its reports go to
        ``reports``."""
        replay, info = self.replay, self.chain[i]
        if info.run_id not in at:
            return
        plan, live, batches, rows, state = steps
        if given is not None:  # its input rows, now that the run before it has committed
            self.append_input(self.chain[i - 1], info, *given)
        if i:  # the stage's arrival ranges, now that the run before it has committed
            info.cuts = cuts_so_far(replay, self.chain[i - 1], info)
            plan = replace(plan, batches=tuple((b, *replay.bounds(info, [b])[b])
                                               for b in batches))
        files = collect_files(plan, rows)
        if not i:
            info.input_bytes += sum(f.bytes_read for f in files.values())
        reports[info.run_id], _ = replay.commit(info, plan, batches, files, live, state,
                                                started, at[info.run_id].removals)
        if choice is not None:
            note_engine(info, batches, choice)
        if i:
            self.save_stage(info)
        else:
            save_run(replay, info)
        if batches[-1] == info.batches:
            at[info.run_id].tables_final()

    def append_input(self, upstream: RunInfo, stage: RunInfo, given: StageInput, last: int
                     ) -> None:
        """Append the stage's input rows of the group up to its upstream's batch ``last``
        to its input table, those of the batches it holds already left out (a group run
        again after a crash)."""
        done = fused_input_batch(self.replay, stage.input_path, stage.run_id)
        if done is None or done < last:
            append_stage_input(self.replay, upstream, stage.input_path, stage.run_id,
                               given.after(done), last)

    def root_part(self, first: int, attempt: str, at: dict[str, RunProgress]
                  ) -> tuple[tuple[StepPlan, list[LiveFile], list[int], list[dict], int | None],
                             pa.Table, EngineChoice]:
        """Step the chain's first run through its group from ``first`` (its bucket tasks on
        Spark, or in this process): its plan, live state files, group, file rows and state
        version, its output rows of the group, and the engine chosen."""
        replay, up = self.replay, self.chain[0]
        ugroup = replay.group_of(up, first)
        state = self.state_before(up, first, at)
        uctx = replay.context(up.query)
        uplan, ulive = replay.step_plan(up, uctx, uctx.operator, ugroup, state, attempt,
                                        in_workers(uctx, up.files))
        lo, hi = uplan.batches[0][1], uplan.batches[-1][2]
        choice = engine_for(replay.engine, replay.spark, up, uctx, first, replay.batches_per_job,
                            replay.settings.handover_at)
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
        return (uplan, ulive, ugroup, rows, state), group_output(uplan, tables), choice

    def state_before(self, info: RunInfo, first: int, at: dict[str, RunProgress]
                     ) -> int | None:
        """The state version of run ``info`` before its batch ``first`` (committed already;
        ``at``: the group's members by run id, whose progress says it)."""
        if info.run_id in at:
            return at[info.run_id].state_version
        if first == 0:
            return None
        manifest = self.replay.manifest(info.run_id).sort_by("batch")
        return manifest.column("state_version")[first - 1].as_py()


def run_fused(replay: Runner, stage: RunInfo,
              on_batch: Callable[[RunInfo, BatchReport], None] | None = None) -> pa.Table:
    """Run (or resume) the stage's run ``stage`` fused with the runs before it in its chain
    (see the module docstring), then record each fused stage's cut points and input; returns
    the stage's manifest."""
    chain = [stage]
    while chain[0].fused_with:
        before = existing_run(replay.warehouse.run_dir(chain[0].fused_with) / "run.json",
                              chain[0].recording, _fingerprint_of(replay, chain[0].recording))
        if before is None:
            raise ReplayError(f"run {chain[0].run_id!r} runs fused with run "
                              f"{chain[0].fused_with!r}, which is gone; replay the query with "
                              "another --run-id")
        chain.insert(0, before)
    manifests = run_lifecycle(replay, FusedRuns(replay, chain), on_batch=on_batch)
    for before, fused in itertools.pairwise(chain):
        record_input(replay, before, fused)
    return manifests[stage.run_id]


def record_input(replay: Runner, upstream: RunInfo, stage: RunInfo) -> None:
    """Once the chain is complete: the stage's input table (written group by group) and cut
    points recorded in its ``run.json`` (no longer fused)."""
    held = fused_input_batch(replay, stage.input_path, stage.run_id)
    if held != upstream.batches:
        holds = "none" if held is None else f"those up to its batch {held}"
        raise ReplayError(f"run {stage.run_id!r}: its input table holds {holds} of the output "
                          f"rows of run {upstream.run_id!r}, not all of them (up to batch "
                          f"{upstream.batches}); replay the query with another --run-id")
    stage.input_version = replay.storage.version(stage.input_path)
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
               "; fused: runs in the jobs of the chain's first stage, batch by batch over "
               "its upstream's output rows as they are made (while its upstream's run is not "
               "complete)"
               if stage["fused_with_upstream"] else
               "; not fused: runs after its upstream's run, over its own run's input table")
        lines.append(f"  {number}. {stage['query']} ({stage['kind']}) reads {reads}, key "
                     f"{stage['key']}, time {stage['time']}{how}")
    return lines

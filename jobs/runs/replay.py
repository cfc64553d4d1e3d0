"""The replay runner: a query over a pinned recording, batch by batch, resumable.

A run lives in ``runs/<run_id>/``: ``run.json`` (query fingerprint, pinned input version, the input
files with their arrival offsets, the batch plan's cut points) and the Delta tables ``output``,
``late``, ``quarantine``, ``state`` and ``manifest``. Every batch commits its output and its state
with a Delta application transaction (app id ``<run_id>/<table>``, version = batch id), so a batch
that is run again after a crash writes nothing twice; the late and quarantined events of the
batches one Spark job ran are committed together (version = the job's last batch id). The
manifest rows of those batches are committed last, together (same version): they mark those
batches done, and a run resumes after the last batch the manifest holds.

This module makes and loads runs (:meth:`Replay.prepare`) and runs a group of batches of one run
(the single-run strategy, :class:`SingleRun`); the lifecycle around the groups (lock, leftovers,
rewind, loop, clean-up, checkpoints) is :mod:`jobs.runs.lifecycle`'s, the commits
:mod:`jobs.runs.run_commits`'.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import cached_property

import pyarrow as pa
from pyspark.sql import SparkSession

from engine import batch_plans as plans
from engine.catalog import Catalog
from engine.operator import KeyedOperator
from engine.specs import BatchSpec, QuerySpec
from jobs.execution.arrival import input_index, overlapping, resolve_cuts, sequenced
from jobs.execution.derived_columns import WorkerDerive, exchange_for, in_workers
from jobs.execution.direct_exchange import execute_direct, execute_finish
from jobs.execution.merged_inputs import merge_inputs
from jobs.execution.spark_exchange import execute_step
from jobs.execution.step_files import buckets_of_file
from jobs.execution.step_plan import KINDS, StepFiles, StepPlan
from jobs.runs.engine_choice import engine_for, note_engine
from jobs.runs.lifecycle import RunProgress, run_lifecycle
from jobs.runs.pipeline_fusion import prepare_stage, run_fused
from jobs.runs.pipeline_stage import reading
from jobs.runs.run_commits import BatchReport, batch_meta, commit_group, commit_rows
from jobs.runs.run_context import RunContext
from jobs.runs.run_info import (
    MANIFEST_SCHEMA,
    ReplayError,
    RunInfo,
    existing_run,
    fingerprint,
)
from jobs.runs.run_segments import save_run
from jobs.runtime.parallelism import bucket_count
from jobs.settings import EXCHANGES, Settings, load_settings
from jobs.storage import DeltaStorage, LiveFile
from jobs.warehouse import Warehouse
from jobs.warehouse_names import check_name


def run_id_of(query: str, sources: dict[str, int], spec: BatchSpec, fp: str) -> str:
    """A run's default id: the query, the pinned versions, the plan, the definition's hash."""
    pinned = ".".join(str(v) for v in sources.values())
    return f"{query}-v{pinned}-{spec.describe().replace(':', '').replace(',', '-')}-{fp[:6]}"


@dataclass
class Replay:
    """Runs (or resumes) one replay of a catalog query."""

    spark: SparkSession
    storage: DeltaStorage
    warehouse: Warehouse
    catalog: Catalog
    settings: Settings = field(default_factory=load_settings)
    #: Consecutive batches run by one Spark job (each commits its tables on its own; their
    #: manifest rows are committed together); default ``settings.batches_per_job``.
    batches_per_job: int = 0
    #: Upper bound on the events of one Spark job (bounds worker memory).
    rows_per_job: int = 2_000_000
    #: ``direct``: each bucket's task reads the input files itself (no shuffle; every task reads
    #: the range); ``spark``: Spark reads and shuffles the events to the buckets. Queries with
    #: derived columns the workers cannot compute use ``spark`` (see
    #: :mod:`jobs.execution.derived_columns`).
    #: Default ``settings.exchange``.
    exchange: str = ""
    #: Called with the run id and a group's batches after the group's table commits and before
    #: its manifest commit (the crash tests kill the process there).
    before_manifest: Callable[[str, list[int]], None] | None = None
    #: Called with a batch id as soon as that batch's output is committed (progress display).
    on_commit: Callable[[int], None] | None = None
    #: Where the bucket tasks run: ``auto``, ``spark`` or ``driver`` (see
    #: :mod:`jobs.runs.engine_choice`); default ``settings.engine``.
    engine: str = ""
    #: Manifests read, by table path: (version, rows).
    _manifests: dict[str, tuple[int, pa.Table]] = field(init=False, default_factory=dict,
                                                        repr=False)

    def __post_init__(self) -> None:
        self.batches_per_job = self.batches_per_job or self.settings.batches_per_job
        self.exchange = self.exchange or self.settings.exchange
        self.engine = self.engine or self.settings.engine

    def prepare(self, query_name: str, plan: str | None = None, run_id: str | None = None,
                version: int | None = None) -> RunInfo:
        """Create the run (or load it, checking it matches) and return its description."""
        if run_id is not None:
            check_name("run id", run_id)  # before reading anything ('' too: no default)
        ctx = self.context(query_name)
        if ctx.query.upstream is not None:  # a pipeline stage: its upstream's run first
            return prepare_stage(self, ctx, plan, run_id, version, run_id_of)
        query, recording, op = ctx.query, ctx.recording, ctx.operator
        sources = self.pin_sources(query, version)
        spec = plans.parse_plan(plan) if plan is not None else query.batch
        fp = fingerprint(query, op)
        if run_id is None:
            run_id = run_id_of(query.name, sources, spec, fp)
        info = existing_run(self.warehouse.run_dir(run_id) / "run.json", query.name, fp)
        if info is not None:
            if plan is not None and info.plan != spec.describe():
                raise ReplayError(f"run {run_id!r} uses plan {info.plan!r}, not {plan!r}")
            pinned = list(info.sources.values()) or [info.input_version]
            if version is not None and [version] != pinned:
                raise ReplayError(f"run {run_id!r} is pinned to version "
                                  f"{', '.join(map(str, pinned))} of {info.recording!r}, not "
                                  f"{version}; omit --version to resume it, or choose another "
                                  "--run-id")
            return info
        buckets = bucket_count(self.spark, self.settings)
        if ctx.merged:
            input_path = self.warehouse.run_table(run_id, "input")
            pinned = merge_inputs(self.storage, self.warehouse, self.catalog, query, sources,
                                  recording, input_path, run_id, buckets)
        else:
            input_path, pinned = self.warehouse.recording(recording.name), sources["input"]
        files = input_index(self.storage, input_path, pinned)
        cuts = resolve_cuts(spec, files, ctx.time_column)
        info = RunInfo(run_id=run_id, query=query.name, fingerprint=fp, recording=recording.name,
                       input_path=input_path, input_version=pinned, plan=spec.describe(),
                       cuts=cuts, files=[asdict(f) for f in files], buckets=buckets,
                       operator=f"{op.name}@{op.version}", query_spec=query.raw,
                       sources=sources,
                       exchange=exchange_for(ctx, self._exchange(),
                                             [asdict(f) for f in files]),
                       created=datetime.now(UTC).isoformat(timespec="seconds"),
                       bucketing="range")
        self.warehouse.run_dir(run_id).mkdir(parents=True, exist_ok=True)
        save_run(self, info)
        return info

    def default_run_id(self, query_name: str, plan: str | None = None) -> str:
        """The id :meth:`prepare` gives a new run of ``query_name`` at the recordings' latest
        versions when no ``run_id`` is given."""
        ctx = self.context(query_name)
        spec = plans.parse_plan(plan) if plan is not None else ctx.query.chain[0].batch
        fp = fingerprint(ctx.query, ctx.operator)
        if ctx.query.upstream is not None:  # a stage: over its upstream's default run
            fp = reading(fp, self.default_run_id(ctx.query.upstream.query.name, plan))
        return run_id_of(query_name, self.pin_sources(ctx.query, None), spec, fp)

    def context(self, query_name: str) -> RunContext:
        """The run context of the catalog's query ``query_name``."""
        return RunContext.of(self.catalog.query(query_name), self.catalog.recordings)

    def _exchange(self) -> str:
        if self.exchange not in EXCHANGES:
            raise ReplayError(f"unknown exchange {self.exchange!r} (REPRISE_EXCHANGE): use "
                              f"{' or '.join(EXCHANGES)}")
        return self.exchange

    def pin_sources(self, query: QuerySpec, version: int | None) -> dict[str, int]:
        """The version of each input recording the run reads (the latest unless ``version``)."""
        if query.upstream is not None:  # a pipeline stage: its first stage's recording
            return self.pin_sources(query.upstream.query, version)
        if version is not None and len(query.inputs) > 1:
            raise ReplayError(f"query {query.name!r} reads {len(query.inputs)} recordings; "
                              "a single --version cannot pin them")
        pinned = {}
        for stream, name in query.inputs.items():
            path = self.warehouse.recording(name)
            if not self.storage.exists(path):
                raise ReplayError(f"recording {name!r} has no data at {path}; run "
                                  f"`reprise generate {name} ...` or `reprise record`")
            latest = self.storage.version(path)
            if version is not None and not 0 <= version <= latest:
                raise ReplayError(f"--version {version}: recording {name!r} has versions 0 to "
                                  f"{latest}")
            pinned[stream] = latest if version is None else version
        return pinned

    def manifest(self, run_id: str) -> pa.Table:
        """The run's manifest rows (empty when no batch is done yet); read once per version."""
        path = self.warehouse.run_table(run_id, "manifest")
        if not self.storage.exists(path):
            return MANIFEST_SCHEMA.empty_table()
        version = self.storage.version(path)
        known = self._manifests.get(path)
        if known is None or known[0] != version:
            self._manifests[path] = known = (
                version, self.storage.read_arrow(path, version).sort_by("batch"))
        return known[1]

    def remember_manifest(self, run_id: str, version: int, rows: pa.Table) -> None:
        """Note that version ``version`` of the run's manifest holds ``rows`` (rows as
        :meth:`manifest` returns them) without reading it."""
        self._manifests[self.warehouse.run_table(run_id, "manifest")] = (version, rows)

    def run(self, info: RunInfo, on_batch: Callable[[BatchReport], None] | None = None,
            clean: bool = True) -> pa.Table:
        """Run the remaining batches of ``info`` (then the end-of-input flush) through the run
        lifecycle (:func:`~jobs.runs.lifecycle.run_lifecycle`: lock, leftovers, rewind, groups,
        clean-up, checkpoints); returns the run's manifest. A stage fused with its upstream
        runs both (:func:`~jobs.runs.pipeline_fusion.run_fused`)."""
        heard = None if on_batch is None else (lambda _, report: on_batch(report))
        if info.fused_with:  # a pipeline stage fused with its upstream's run
            return run_fused(self, info, on_batch=None if on_batch is None else (
                lambda run, report: run.run_id == info.run_id and on_batch(report)))
        return run_lifecycle(self, SingleRun(self, info), clean=clean,
                             on_batch=heard)[info.run_id]

    def group_of(self, info: RunInfo, first: int) -> list[int]:
        """Consecutive batches run by one Spark job; the end-of-input flush joins the last group
        (every bucket has a task there: see :func:`execute_step`)."""
        if first == info.batches:
            return [first]
        group, rows = [first], info.cuts[first + 1] - info.cuts[first]
        while (len(group) < self.batches_per_job and group[-1] + 1 < info.batches
               and rows + info.cuts[group[-1] + 2] - info.cuts[group[-1] + 1]
               <= self.rows_per_job):
            group.append(group[-1] + 1)
            rows += info.cuts[group[-1] + 1] - info.cuts[group[-1]]
        if group[-1] + 1 == info.batches:
            group.append(info.batches)
        return group

    def tables(self, info: RunInfo) -> dict[str, str]:
        """The paths of the run's tables by kind (``output``, ..., ``manifest``)."""
        return {k: self.warehouse.run_table(info.run_id, k) for k in (*KINDS, "manifest")}

    def step_plan(self, info: RunInfo, ctx: RunContext, op: KeyedOperator, group: list[int],
                  state_version: int | None, attempt: str, derive: WorkerDerive | None = None
                  ) -> tuple[StepPlan, list[LiveFile]]:
        """The workers' plan for ``group`` of run ``info`` stepping ``op`` (the run's operator,
        or a shared run's version of it) from the state at ``state_version``, writing into
        staging directories of ``attempt``; and the live state files it starts from."""
        tables = self.tables(info)
        late_schema = op.late_schema(ctx.recording.arrow_schema())
        schemas = {"output": op.output_schema.append(pa.field("batch", pa.int64())),
                   "late": late_schema, "quarantine": late_schema,
                   "state": op.state_codec.schema}
        dirs = {k: self.storage.staging_dir(tables[k], attempt) for k in KINDS}
        live = (self.storage.live_files(tables["state"], state_version)
                if state_version is not None else [])
        state_files: dict[int, list[str]] = {}
        for f in live:  # (a file of a group of buckets is each of theirs)
            for bucket in buckets_of_file(f.path, info.buckets):
                state_files.setdefault(bucket, []).append(f.path)
        bounds = self.bounds(info, group)
        plan = StepPlan(op=op, batches=tuple((b, *bounds[b]) for b in group),
                        dirs=dirs, schemas=schemas, recording_columns=tuple(ctx.recording.columns),
                        time_column=ctx.time_column, state_files=state_files,
                        buckets=info.buckets, modulo_buckets=info.bucketing == "modulo",
                        finish=group[-1] == info.batches,
                        kernel_dir=self.settings.kernel_dir and str(self.settings.kernel_dir),
                        derive=derive, events_done=self._events_done(info, tables, group))
        return plan, live

    def _events_done(self, info: RunInfo, tables: dict[str, str], group: list[int]
                     ) -> dict[str, int]:
        """Late, quarantine -> the last batch of ``group`` whose events of that kind the table
        holds already (an earlier attempt of the run committed them, with other job sizes)."""
        done = {}
        for kind in ("late", "quarantine"):
            if not self.storage.exists(tables[kind]):
                continue
            version = self.storage.txn_version(tables[kind], info.txn(kind, group[-1]).app_id)
            if version is None:
                continue
            held = [b for b in group if info.txn(kind, b).version <= version]
            if held:
                done[kind] = held[-1]
        return done

    @staticmethod
    def bounds(info: RunInfo, group: list[int]) -> dict[int, tuple[int, int]]:
        """The arrival range ``[lo, hi)`` of each batch of ``group`` (the end-of-input flush:
        an empty range at the end)."""
        cuts = info.cuts
        return {b: (cuts[b], cuts[b + 1]) if b < info.batches else (info.total, info.total)
                for b in group}

    def run_group(self, info: RunInfo, ctx: RunContext, group: list[int],
                   state_version: int | None, removals: list[str] | None = None
                   ) -> tuple[list[BatchReport], int | None]:
        """Run and commit one group of batches; ``removals``: the output files the commit of
        its first batch removes (see :func:`jobs.runs.run_segments.output_removals`)."""
        started = time.perf_counter()  # manifest bookkeeping only
        # A fresh directory per attempt: a retried batch never overwrites files that an earlier,
        # crashed attempt may already have committed (the name is bookkeeping, not output).
        attempt = uuid.uuid4().hex[:8]
        derive = in_workers(ctx, info.files) if info.exchange == "direct" else None
        plan, live = self.step_plan(info, ctx, ctx.operator, group, state_version, attempt,
                                    derive)
        lo, hi = plan.batches[0][1], plan.batches[-1][2]
        # Spark, or the bucket tasks one after the other in this process
        choice = engine_for(self.engine, self.spark, info, ctx, group[0], self.batches_per_job,
                            self.settings.handover_at)
        spark = self.spark if choice.engine == "spark" else None
        if info.exchange == "direct":
            steps = execute_direct(spark, plan, overlapping(info.files, lo, hi), info.buckets)
            info.input_bytes += sum(s.bytes_read for s in steps.values())
        elif group == [info.batches]:  # alone: one task per bucket that holds state
            steps = execute_finish(spark, plan)
        else:
            events = sequenced(self.storage, info.input_path, info.input_version, info.files,
                               lo, hi, plan.time_column, ctx.query.derived)
            steps = execute_step(plan, events, info.buckets)
        done = self.commit(info, plan, group, steps, live, state_version, started, removals)
        note_engine(info, group, choice)
        save_run(self, info)
        return done

    def commit(self, info: RunInfo, plan: StepPlan, group: list[int],
               steps: dict[int, StepFiles], live: list[LiveFile], state_version: int | None,
               started: float, removals: list[str] | None = None
               ) -> tuple[list[BatchReport], int | None]:
        """Commit what the workers of ``group`` wrote (``steps``) to the run's tables, then the
        group's manifest rows, which mark its batches done: (reports, last state version).
        ``removals``: output files the first batch's output commit removes."""
        tables = self.tables(info)
        reports, rows, state_version = commit_group(self.storage, info, tables, plan, group,
                                                    self.bounds(info, group), steps, live,
                                                    state_version, started, removals,
                                                    self.on_commit)
        if self.before_manifest is not None:
            self.before_manifest(info.run_id, group)
        path, new = tables["manifest"], pa.Table.from_pylist(rows, MANIFEST_SCHEMA)
        known = self._manifests.get(path)
        version, skipped = commit_rows(self.storage, path, new, info.txn("manifest", group[-1]),
                                       batch_meta(info, group[-1]))
        if skipped or version is None:
            return reports, state_version
        if known is None and version == 0:  # the rows it holds: no need to read them
            self.remember_manifest(info.run_id, version, new)
        elif known is not None and version == known[0] + 1 and known[1].schema.equals(new.schema):
            # (one chunk: a run continued for days would gain a chunk per commit)
            self.remember_manifest(info.run_id, version,
                                   pa.concat_tables([known[1], new]).combine_chunks())
        return reports, state_version


@dataclass
class SingleRun:
    """The single-run strategy of the run lifecycle: one run, each group one Spark job (or, few
    events, the driver) with the run's operator."""

    replay: Replay
    info: RunInfo

    @property
    def runs(self) -> list[RunInfo]:
        """The one run."""
        return [self.info]

    @cached_property
    def context(self) -> RunContext:
        """The run's query, recording(s) and operator (made once for all its groups)."""
        return self.replay.context(self.info.query)

    def run_group(self, group: list[int], members: list[RunProgress]
                  ) -> dict[str, list[BatchReport]]:
        """Run and commit ``group`` of the run."""
        (progress,) = members
        reports, _ = self.replay.run_group(self.info, self.context, group,
                                           progress.state_version, progress.removals)
        return {self.info.run_id: reports}

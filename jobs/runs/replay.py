"""The replay runner: a query over a pinned recording, batch by batch, resumable.

A run lives in ``runs/<run_id>/``: ``run.json`` (query fingerprint, pinned input version, the input
files with their arrival offsets, the batch plan's cut points) and the Delta tables ``output``,
``late``, ``quarantine``, ``state`` and ``manifest``. Every batch commits its output and its state
with a Delta application transaction (app id ``<run_id>/<table>``, version = batch id), so a batch
that is run again after a crash writes nothing twice; the late and quarantined events of the
batches one Spark job ran are committed together (version = the job's last batch id). The
manifest rows of those batches are committed last, together (same version): they mark those
batches done, and a run resumes after the last batch the manifest holds.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

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
from jobs.execution.step_files import bucket_of_file
from jobs.execution.step_plan import KINDS, StepFiles, StepPlan
from jobs.runs.engine_choice import engine_for, note_engine
from jobs.runs.run_context import RunContext
from jobs.runs.run_info import MANIFEST_SCHEMA, ReplayError, RunInfo, fingerprint, load_run_file
from jobs.runs.run_lock import run_lock
from jobs.runs.run_segments import finish_rewind, output_removals, save_run
from jobs.runtime.parallelism import bucket_count
from jobs.settings import EXCHANGES, Settings, load_settings
from jobs.storage import DeltaStorage, LiveFile, StagedFile, Txn
from jobs.storage.orphans import marks, remove_leftovers
from jobs.storage.staging import stage_table
from jobs.warehouse import Warehouse
from jobs.warehouse_names import check_name


def _default_run_id(query: str, sources: dict[str, int], spec: BatchSpec, fp: str) -> str:
    """A run's default id: the query, the pinned versions, the plan, the definition's hash."""
    pinned = ".".join(str(v) for v in sources.values())
    return f"{query}-v{pinned}-{spec.describe().replace(':', '').replace(',', '-')}-{fp[:6]}"


#: A run's tables get a Delta checkpoint at the end of a replay (or continuation) when their log
#: has this many commits after the last one: opening them never replays more log entries.
CHECKPOINT_EVERY = 20


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
        query, recording, op = ctx.query, ctx.recording, ctx.operator
        sources = self._pin_sources(query, version)
        spec = plans.parse_plan(plan) if plan is not None else query.batch
        fp = fingerprint(query, op)
        if run_id is None:
            run_id = _default_run_id(query.name, sources, spec, fp)
        run_file = self.warehouse.run_dir(run_id) / "run.json"
        if run_file.exists():
            info = load_run_file(run_file)
            if info.query != query.name or info.fingerprint != fp:
                raise ReplayError(f"run {run_id!r} was made by a different query definition "
                                  f"({info.query}, fingerprint {info.fingerprint}); choose "
                                  "another --run-id")
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
                       created=datetime.now(UTC).isoformat(timespec="seconds"))
        run_file.parent.mkdir(parents=True, exist_ok=True)
        save_run(self, info)
        return info

    def default_run_id(self, query_name: str, plan: str | None = None) -> str:
        """The id :meth:`prepare` gives a new run of ``query_name`` at the recordings' latest
        versions when no ``run_id`` is given."""
        ctx = self.context(query_name)
        spec = plans.parse_plan(plan) if plan is not None else ctx.query.batch
        return _default_run_id(query_name, self._pin_sources(ctx.query, None), spec,
                               fingerprint(ctx.query, ctx.operator))

    def context(self, query_name: str) -> RunContext:
        """The run context of the catalog's query ``query_name``."""
        return RunContext.of(self.catalog.query(query_name), self.catalog.recordings)

    def _exchange(self) -> str:
        if self.exchange not in EXCHANGES:
            raise ReplayError(f"unknown exchange {self.exchange!r} (REPRISE_EXCHANGE): use "
                              f"{' or '.join(EXCHANGES)}")
        return self.exchange

    def _pin_sources(self, query: QuerySpec, version: int | None) -> dict[str, int]:
        """The version of each input recording the run reads (the latest unless ``version``)."""
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
        """Run the remaining batches of ``info`` (then the end-of-input flush); returns manifest.
        Holds the run's lock (another process replaying it makes this raise ``RunBusy``); deletes
        the files killed task attempts staged but never committed first (``clean=False``: the
        caller knows there is none, e.g. a continuation of a complete run) and, once the last
        batch is committed, those this call's task attempts staged and did not commit (it looks
        only at what was staged and committed since it started)."""
        tables = self.tables(info).values()
        with run_lock(self.warehouse.run_dir(info.run_id), info.run_id):
            if clean:
                remove_leftovers(tables)
            started = marks(tables)
            finish_rewind(self, info)  # a continuation stopped before its rewind was done
            manifest = self._run(info, on_batch)
            remove_leftovers(tables, since=started)
            # (a continued run's logs grow by a few commits a segment; delta-rs writes a
            # checkpoint without holding the GIL, so the tables' run side by side)
            with ThreadPoolExecutor(len(tables)) as pool:
                list(pool.map(lambda table: self.storage.exists(table)
                              and self.storage.checkpoint(table, CHECKPOINT_EVERY), tables))
            return manifest

    def _run(self, info: RunInfo, on_batch: Callable[[BatchReport], None] | None) -> pa.Table:
        ctx = self.context(info.query)
        done = self.manifest(info.run_id)
        batch = done.num_rows
        state_version = done.column("state_version")[-1].as_py() if done.num_rows else None
        removals = output_removals(self, info, done)
        while batch <= info.batches:
            group = self.group_of(info, batch)
            reports, state_version = self._run_group(info, ctx, group, state_version, removals)
            removals = None
            for report in reports:
                if on_batch:
                    on_batch(report)
            batch = group[-1] + 1
        return self.manifest(info.run_id)

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
        for f in live:  # (a file of every bucket is each bucket's)
            of = bucket_of_file(f.path)
            for bucket in range(info.buckets) if of is None else [of]:
                state_files.setdefault(bucket, []).append(f.path)
        bounds = self.bounds(info, group)
        plan = StepPlan(op=op, batches=tuple((b, *bounds[b]) for b in group),
                        dirs=dirs, schemas=schemas, recording_columns=tuple(ctx.recording.columns),
                        time_column=ctx.time_column, state_files=state_files,
                        buckets=info.buckets,
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

    def _run_group(self, info: RunInfo, ctx: RunContext, group: list[int],
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
        choice = engine_for(self.engine, self.spark, info, ctx, group[0], self.batches_per_job)
        spark = self.spark if choice.engine == "spark" else None
        if info.exchange == "direct":
            steps = execute_direct(spark, plan, overlapping(info.files, lo, hi), info.buckets)
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
        reports, rows, state_version = self._commit_group(info, tables, plan, group,
                                                          self.bounds(info, group), steps, live,
                                                          state_version, started, removals)
        if self.before_manifest is not None:
            self.before_manifest(info.run_id, group)
        path, new = tables["manifest"], pa.Table.from_pylist(rows, MANIFEST_SCHEMA)
        known = self._manifests.get(path)
        version, skipped = self._commit_rows(path, new, info.txn("manifest", group[-1]),
                                             _meta(info, group[-1]))
        if skipped or version is None:
            return reports, state_version
        if known is None and version == 0:  # the rows it holds: no need to read them
            self.remember_manifest(info.run_id, version, new)
        elif known is not None and version == known[0] + 1 and known[1].schema.equals(new.schema):
            self.remember_manifest(info.run_id, version, pa.concat_tables([known[1], new]))
        return reports, state_version

    def _commit_group(self, info: RunInfo, tables: dict[str, str], plan: StepPlan,
                      group: list[int], bounds: dict[int, tuple[int, int]],
                      steps: dict[int, StepFiles], live: list[LiveFile],
                      state_version: int | None, started: float,
                      removals: list[str] | None = None
                      ) -> tuple[list[BatchReport], list[dict], int | None]:
        """Commit the files of a group's batches: (reports, manifest rows, last state version).
        A batch's duration is its share of the group's time since ``started``; ``removals``:
        output files the first batch's output commit removes (that commit is made even when it
        adds and removes nothing, so that a retry finds it done).

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
            "output": partial(self._commit_appends, info, "output", tables["output"],
                              plan.schemas["output"], group, steps, removals),
            **{kind: partial(self._commit_events, info, kind, tables[kind], plan, stepped, steps)
               for kind in ("late", "quarantine")},
            "state": partial(self._commit_states, info, tables["state"], plan.schemas["state"],
                             stepped, steps, live)}
        if self.storage.commits_wait(tables["output"]):
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

    def _commit_appends(self, info: RunInfo, kind: str, path: str, schema: pa.Schema,
                        batches: list[int], steps: dict[int, StepFiles],
                        removals: list[str] | None = None) -> dict[int, int | None]:
        """Commit ``batches`` of the output table in order: the version holding each; the first
        one's commit also removes ``removals`` (when not None, it is made even if empty)."""
        versions = {}
        for batch in batches:
            versions[batch] = self._commit(path, steps[batch].staged[kind], schema,
                                           info.txn(kind, batch), _meta(info, batch),
                                           remove=removals, force=removals is not None)[0]
            removals = None
            if self.on_commit:
                self.on_commit(batch)
        return versions

    def _commit_events(self, info: RunInfo, kind: str, path: str, plan: StepPlan,
                       batches: list[int], steps: dict[int, StepFiles]) -> None:
        """Commit the late or quarantined events of a group's ``batches`` in one commit (app
        transaction version: the last batch's). The workers wrote none of the batches an
        earlier attempt's commit holds already (``plan.events_done``)."""
        if not batches or plan.events_done.get(kind, -1) >= batches[-1]:
            return
        files = [f for batch in batches for f in steps[batch].staged[kind]]
        self._commit(path, files, plan.schemas[kind], info.txn(kind, batches[-1]),
                     _meta(info, batches[-1]), need_version=False)

    def _commit_states(self, info: RunInfo, path: str, schema: pa.Schema, batches: list[int],
                       steps: dict[int, StepFiles], live: list[LiveFile]
                       ) -> dict[int, tuple[int, int, int]]:
        """Commit the state files of ``batches`` in order, each replacing its buckets' files (a
        file of every bucket once every bucket has stepped past it): (version, rows, bytes) of
        the state after each batch."""
        after = {}
        for batch in batches:
            step = steps[batch]
            every = step.buckets >= set(range(info.buckets))
            replaced = [f.path for f in live
                        if bucket_of_file(f.path) in step.buckets
                        or (every and bucket_of_file(f.path) is None)]
            version, skipped = self._commit(path, step.staged["state"], schema,
                                            info.txn("state", batch),
                                            _meta(info, batch), remove=replaced)
            live = (self.storage.live_files(path, version) if skipped
                    # an earlier attempt committed this batch's state files: ask the table
                    else [f for f in live if f.path not in replaced]
                    + [LiveFile(f.path, f.size, f.num_records) for f in step.staged["state"]])
            after[batch] = (version, sum(f.rows for f in live), sum(f.size for f in live))
        return after

    def _commit_rows(self, path: str, table: pa.Table, txn: Txn, meta: dict,
                     remove: list[str] | None = None) -> tuple[int | None, bool]:
        """Commit a small table (manifest rows) once, as one staged Parquet file (none when it
        has no rows), dropping the live files ``remove`` in the same commit: (table version
        holding them, skipped as already done)."""
        staged = [stage_table(self.storage, path, table)] if table.num_rows else []
        return self._commit(path, staged, table.schema, txn, meta, remove=remove)

    def _commit(self, path: str, files: list[StagedFile], schema: pa.Schema, txn: Txn,
                meta: dict, remove: list[str] | None = None, need_version: bool = True,
                force: bool = False) -> tuple[int | None, bool]:
        """Commit a batch's files once: (table version holding them, skipped as already done).

        A batch that adds and removes nothing leaves an existing table alone (a retry of it
        would write nothing either; ``force``: it is committed all the same); the first batch
        always creates the table. Without ``need_version`` such a no-op returns no version (it
        costs a log read).
        """
        if not files and not remove and not force and self.storage.exists(path):
            return (self.storage.version(path) if need_version else None), False
        result = self.storage.commit_files(path, files, schema, txn=txn, metadata=meta,
                                           remove=remove or ())
        if not result.skipped:
            return result.version, False
        _discard(files)  # committed by an earlier attempt: these recomputed files are spares
        return self.storage.version_with(path, meta), True


def _discard(files: list[StagedFile]) -> None:
    """Delete staged files an earlier attempt's commit made spares (it holds their batches)."""
    for f in files:
        Path(f.path.removeprefix("file://")).unlink(missing_ok=True)


def _meta(info: RunInfo, batch: int) -> dict[str, str]:
    """The metadata of a batch's commits (it finds them again on a retry)."""
    meta = {"reprise.run": info.run_id, "reprise.batch": str(batch)}
    if len(info.segments) > 1:
        meta["reprise.segment"] = str(len(info.segments) - 1)
    return meta

"""Shared replays: several catalog queries on one recording replayed in one pass.

Each query keeps its own run (the run id a standalone replay would get, its own ``output``,
``late``, ``quarantine``, ``state`` and ``manifest`` tables and per-batch commits, so validation,
checks and resumption work per query unchanged). What is shared, per group of batches: the
queries are split into parts of about equal estimated work (:func:`parts`,
:mod:`jobs.shared.shared_work`), one Spark job of one task each, side by side; a part's task reads
the
batch files once, applies each cluster's widened predicate W once (engine/sharing's plan) and
hands every member query the rows of every bucket, that query's residual predicate in front of
its own operator (``jobs.execution.keyed_steps.run_bucket``).
Events without key or time reach every query regardless of W: a query quarantines them as a
standalone run does.

Pipeline stages over one upstream query share its stream the same way: their runs read the
upstream's output once (:mod:`jobs.shared.shared_stages`), then each group of batches of that
stream is read once for all of them.

Queries that cannot share (derived columns, multi-input, a run made with the Spark exchange, a
stage left fused with its upstream, or a batch plan other than the others') are replayed on
their own by the same runner. The window
queries of a pane group step from shared panes where their operators allow it
(:func:`pane_shares`, as their family shares panes).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from engine import frames
from engine.family import QueryFamily, SharedPanes
from engine.filtered import FilteredOperator, Passing
from engine.operator import SEQ, TIME, KeyedOperator, exact_pandas
from engine.predicate import TRUE, Pred
from engine.sharing import SharedPlan
from engine.specs import QuerySpec, RecordingSpec
from jobs.execution.arrival import overlapping
from jobs.execution.bucketing import key_buckets
from jobs.execution.direct_exchange import per_task
from jobs.execution.input_files import read_range
from jobs.execution.keyed_steps import (
    BucketSplit,
    batch_buckets,
    no_events,
    run_bucket,
    split_bucket,
)
from jobs.execution.step_files import collect_files
from jobs.execution.step_plan import StepPlan
from jobs.runs.lifecycle import RunProgress, run_lifecycle
from jobs.runs.listing import resume_note
from jobs.runs.replay import Replay
from jobs.runs.run_commits import BatchReport
from jobs.runs.run_info import RunInfo
from jobs.shared.shared_derive import ClusterDerive, cluster_derive
from jobs.shared.shared_plan import named_once, on_its_own, one_input, shared_plan
from jobs.shared.shared_stages import one_upstream, prepare_stages
from jobs.shared.shared_work import work_of

QUERY = "__query"


@dataclass(frozen=True)
class Member:
    """One query of a shared job: its step plan (its operator behind its residual predicate)
    and the widened predicate W of its cluster."""

    name: str
    plan: StepPlan
    widened: Pred
    share: SharedPanes | None = None  # its pane group's shared panes (its family's)
    passing: Passing | None = None  # the passing rows of its residual, shared by its filters
    #: Its cluster's derived columns, when it or W reads one; its derived columns (name ->
    #: stream name); the stream names its residual reads; whether it reads a computed one
    #: (not only constants).
    derive: ClusterDerive | None = None
    derived: Mapping[str, str] = field(default_factory=dict)
    reads: tuple[str, ...] = ()
    computes: bool = False

    @property
    def shared(self) -> tuple[object, ...]:
        """The objects whose work must be done once for all their members, in one part: its
        pane group's panes and its cluster's computed derived columns (constants are added in
        every part; a residual is evaluated once in each part that has members behind it, as
        cheap as a few of its rows' writes, so it does not tie its members to one part)."""
        return tuple(s for s in (self.share, self.derive if self.computes else None)
                     if s is not None)


def sharable(info: RunInfo, query: QuerySpec, recordings: dict[str, RecordingSpec]) -> bool:
    """Whether run ``info`` of ``query`` can join a shared scan: a query that can share
    (:func:`~jobs.shared.shared_plan.on_its_own`), read with the direct exchange, not a stage
    fused with its upstream's run."""
    return (info.exchange == "direct" and not info.fused_with
            and on_its_own(query, recordings) is None)


def _scan_of(info: RunInfo) -> tuple:
    """What runs sharing a scan agree on: pinned input (and its files' rows: stages over one
    upstream read equal input tables), batch plan, buckets."""
    return (info.recording, info.input_version, tuple(f["rows"] for f in info.files), info.cuts,
            info.buckets, info.bucketing)


def pane_shares(plan: SharedPlan, operators: dict[str, KeyedOperator],
                families: dict[str, QueryFamily]) -> dict[str, SharedPanes]:
    """Query -> the shared panes of its pane group, as the queries' family shares them
    (:meth:`~engine.family.QueryFamily.share_panes`; the others run their own operators).
    Members share panes only with those that name their derived columns alike (the panes'
    partials are named by the operators' column names)."""
    shares = {}
    views = {v.name: v for v in plan.views}
    for cluster in plan.clusters:
        for group in cluster.pane_groups:
            present = [q for q in group.queries if q in operators]
            alike: dict[tuple, list[str]] = {}
            for q in present:
                alike.setdefault((id(families[q]), views[q].derived), []).append(q)
            for queries in sorted(alike.values()):
                family = families[queries[0]]
                shares.update(family.share_panes(group, {q: operators[q] for q in queries}))
    return shares


def shared_part(members: list[Member], files: list[dict], buckets: int) -> pd.DataFrame:
    """The worker side of a shared job, for its part of the members (:func:`parts`): read the
    range once, compute each cluster's derived columns once, apply each cluster's W once, and
    step each member's operator over the keys of every bucket as one (the operators work key
    by key; each batch writes one state file of every bucket:
    :func:`~jobs.execution.keyed_steps.run_bucket`)."""
    first = members[0].plan
    lo, hi = first.batches[0][1], first.batches[-1][2]
    if not files:
        none = np.empty(0, "int64")
        idle = batch_buckets(first, none, none, buckets)
        return _concat([run_bucket(m.plan, range(buckets), no_events(m.plan), by_bucket=idle)
                        .assign(**{QUERY: m.name}) for m in members])
    for shared in {id(s): s for m in members for s in (m.share, m.passing) if s}.values():
        shared.reset()  # (the driver runs the parts one after the other with these objects)
    derives = list({id(m.derive): m.derive for m in members if m.derive}.values())
    computed = {id(m.derive) for m in members if m.computes}
    columns = recording_columns(members)
    # the members' keys (a constant key, a derived column, by its stream name)
    keys = sorted({m.derived.get(m.plan.op.key, m.plan.op.key) for m in members})
    parts = read_range(files, columns, [k for k in keys if k in columns], lo, hi)
    table = pa.concat_tables([p.table for p in parts])
    for derive in derives:  # (the constant key of key: none before the buckets)
        table = derive.add_constants(table)
    seq = np.concatenate([p.seq for p in parts])
    # key -> events per batch and bucket, W or not
    by_bucket = {key: batch_buckets(first, key_buckets(table.column(key), buckets,
                                                       first.modulo_buckets), seq, buckets)
                 for key in keys}
    for column in {m.plan.time_column for m in members}:
        table = table.append_column(f"{TIME}:{column}", table.column(column).cast(
            pa.timestamp("us")).cast(pa.int64()))
    # nanosecond timestamps, as the standalone direct exchange hands them to the operators
    frame = exact_pandas(table, coerce_temporal_nanoseconds=True)
    frame[SEQ] = seq
    for derive in derives:  # each cluster's definitions once, over every event (W or not)
        if id(derive) in computed:
            frame = derive.add_to(frame, lo)
    widened: dict[Pred, np.ndarray] = {}
    unplaced: dict[tuple[str, str], np.ndarray] = {}  # no key or no time, by key and time
    streams: dict[tuple, pd.DataFrame] = {}
    splits: dict[tuple, BucketSplit] = {}
    out = []
    for m in members:
        key, time_column = m.derived.get(m.plan.op.key, m.plan.op.key), m.plan.time_column
        values = isinstance(frame[key].dtype, pd.CategoricalDtype) and not (
            m.plan.op.codes_keys or m.plan.op.categorical_keys)
        names = {c: m.derived.get(c, c) for c in [*m.plan.recording_columns, *m.reads, SEQ]}
        stream = (m.widened, key, time_column, values, tuple(names.items()))
        if stream not in streams:  # each cluster's W, and its members' events, once per key
            if m.widened not in widened:
                widened[m.widened] = np.asarray(m.widened.evaluate(frame), dtype=bool)
            if (key, time_column) not in unplaced:
                unplaced[key, time_column] = (frame[key].isna().to_numpy()
                                              | frame[time_column].isna().to_numpy())
            rows = widened[m.widened] | unplaced[key, time_column]
            streams[stream] = _stream(frame, names, time_column,
                                      None if rows.all() else np.flatnonzero(rows),
                                      m.plan.op.key, values)
        # the stream's quarantine split and batches, once for the members that agree on it
        split = (*stream, m.plan.op.codes_keys)
        if split not in splits:
            splits[split] = split_bucket(m.plan, streams[stream])
        out.append(run_bucket(m.plan, range(buckets), splits[split], by_bucket=by_bucket[key])
                   .assign(**{QUERY: m.name}))
    return _concat(out)


def recording_columns(members: list[Member]) -> list[str]:
    """The recording columns the members read (their derived columns are computed)."""
    return sorted({c for m in members for c in m.plan.recording_columns if c not in m.derived})


def _stream(frame: pd.DataFrame, names: Mapping[str, str], time_column: str,
            rows: np.ndarray | None, key: str, values: bool) -> pd.DataFrame:
    """The events of a shared stream: ``frame``'s ``rows`` (None: all of them, its arrays
    taken as they are, not copied) with the columns ``names`` (stream column -> frame column:
    a derived column's stream name), the arrival sequence and ``time_column`` as the event
    time; ``values``: the key as plain values, as the direct exchange hands a categorical key
    column to an operator that wants values."""
    names = {**names, TIME: f"{TIME}:{time_column}"}
    arrays = {name: frames.values(frame[c]) if rows is None else frames.take(frame[c], rows)
              for name, c in names.items()}
    if values:
        arrays[key] = np.asarray(arrays[key], dtype=object)
    return pd.DataFrame(arrays, copy=False)


def parts(members: list[Member], count: int,
          work: Callable[[list[Member]], float] = len) -> list[list[Member]]:
    """``members`` in at most ``count`` parts of about equal ``work`` (default: as many
    members), one Spark task each, in member order; the members of one pane group or of one
    cluster's computed derived columns stay in one part (they share its work:
    :attr:`Member.shared`). The units, heaviest first, each go to the lightest part so far."""
    units: list[list[Member]] = []
    unit_of: dict[int, int] = {}  # shared object -> its unit
    for m in members:
        ids = [id(s) for s in m.shared]
        found = sorted({unit_of[i] for i in ids if i in unit_of})
        if not found:
            units.append([])
            found = [len(units) - 1]
        for other in found[1:]:  # a member that joins two units makes them one
            units[found[0]] += units[other]
            units[other] = []
            unit_of.update({i: found[0] for i, u in unit_of.items() if u == other})
        units[found[0]].append(m)
        unit_of.update(dict.fromkeys(ids, found[0]))
    loads: list[list[Member]] = [[] for _ in range(count)]
    weights = [0.0] * count
    weighed = [(work(u), u) for u in units if u]
    for weight, unit in sorted(weighed, key=lambda w: w[0], reverse=True):  # (stable sort)
        i = min(range(count), key=weights.__getitem__)
        loads[i].extend(unit)
        weights[i] += weight
    order = {m.name: i for i, m in enumerate(members)}
    return [sorted(part, key=lambda m: order[m.name]) for part in loads if part]


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


@dataclass
class SharedReplay:
    """Replays several queries of the catalog on one recording as one shared run."""

    runner: Replay
    #: Spark tasks started so far, one per part of a group (each reads the group's range once).
    tasks: int = field(default=0, init=False)
    #: Derived columns computed so far: per group, each part's clusters' definitions once.
    derived_computed: int = field(default=0, init=False)
    #: Reads of an upstream query's output by the stages prepared over it.
    upstream_reads: int = field(default=0, init=False)

    def prepare(self, names: list[str], plan: str | None = None, version: int | None = None,
                upstream: RunInfo | None = None) -> list[RunInfo]:
        """Each query's run (created or loaded, with its standalone run id); stages over one
        upstream query read its output once (:func:`~jobs.shared.shared_stages.prepare_stages`;
        ``upstream``: the complete run of it they read, default the one at ``plan`` and
        ``version``)."""
        if len(names) > 1 and one_upstream(self.runner.catalog, names) is not None:
            infos, reads = prepare_stages(self.runner, names, plan, version, upstream)
            self.upstream_reads += reads
            return infos
        return [self.runner.prepare(name, plan=plan, version=version) for name in names]

    def plan(self, infos: list[RunInfo]) -> tuple[SharedPlan | None, list[RunInfo]]:
        """The shared plan of the runs that can share a scan (None when fewer than two), and
        the runs replayed on their own."""
        catalog = self.runner.catalog
        candidates = [i for i in infos
                      if sharable(i, catalog.query(i.query), catalog.recordings)]
        shared = [i for i in candidates if _scan_of(i) == _scan_of(candidates[0])]
        alone = [i for i in infos if i not in shared]
        if len(shared) < 2:
            return None, infos
        return shared_plan(catalog, self.runner.warehouse, [i.query for i in shared],
                           sample=shared[0].input_path), alone

    def run(self, infos: list[RunInfo],
            on_batch: Callable[[str, BatchReport], None] | None = None,
            say: Callable[[str], None] = lambda line: None,
            planned: tuple[SharedPlan | None, list[RunInfo]] | None = None
            ) -> dict[str, pa.Table]:
        """Run (or resume) every run of ``infos``: the sharable ones together, the others on
        their own; returns each run's manifest by run id. ``say`` hears which is which;
        ``planned``: :meth:`plan` of ``infos`` when the caller has it already."""
        plan, alone = planned or self.plan(infos)
        if plan is not None:
            say(f"shared run of {', '.join(i.query for i in infos if i not in alone)}: plan "
                f"{plan.plan_hash[:16]}, {len(plan.clusters)} scan(s) of W "
                + "; ".join(c.where.sql for c in plan.clusters))
        manifests = {}
        for info in alone:
            say(f"{info.query}: replayed on its own (run {info.run_id})")
            manifests[info.run_id] = self.runner.run(
                info, on_batch=on_batch and (lambda r, q=info.query: on_batch(q, r)))
        if plan is not None:
            shared = [i for i in infos if i not in alone]
            manifests.update(self.run_shared(plan, shared, on_batch))
        return manifests

    def run_shared(self, plan: SharedPlan, infos: list[RunInfo],
                   on_batch: Callable[[str, BatchReport], None] | None = None
                   ) -> dict[str, pa.Table]:
        """Run the batches of ``infos`` (sharable runs) in shared jobs, each run resuming after
        its own last committed batch, through the run lifecycle
        (:func:`~jobs.runs.lifecycle.run_lifecycle`)."""
        heard = None if on_batch is None else (lambda info, report: on_batch(info.query, report))
        return run_lifecycle(self.runner, SharedRuns(self, plan, infos), on_batch=heard)

    def _run_group(self, plan: SharedPlan, progress: list[RunProgress], group: list[int]
                   ) -> dict[str, list[BatchReport]]:
        """One Spark job for ``group`` of every run of ``progress`` (where each run stands),
        then each run's commits; each run's reports by query."""
        runner = self.runner
        started = time.perf_counter()  # manifest bookkeeping only
        infos = [p.info for p in progress]
        first = infos[0]
        attempt = uuid.uuid4().hex[:8]
        contexts = {i.query: runner.context(i.query) for i in infos}
        inner = {q: c.family.operator(c.query, c.recordings) for q, c in contexts.items()}
        shares = pane_shares(plan, inner, {q: c.family for q, c in contexts.items()})
        filters: dict[Pred, Passing] = {}  # by residual
        derives: dict[int, ClusterDerive | None] = {}  # by cluster
        views = {v.name: v for v in plan.views}
        prepared = {}
        for info, at in zip(infos, progress, strict=True):
            version = at.state_version
            cluster = plan.cluster_of(info.query)
            op = inner[info.query]
            if info.query in shares:
                op = shares[info.query].member(op)
            residual = cluster.residual(info.query).where
            passes = None
            if residual != TRUE:
                passes = filters.setdefault(residual, Passing(residual))
                op = FilteredOperator(op, residual, passes)
            step_plan, live = runner.step_plan(info, contexts[info.query], op, group, version,
                                               attempt)
            view = views[info.query]
            derived = {d.name: d.stream for d in view.derived}
            streams = {s for d in cluster.derived for s in d.streams}
            reads = tuple(sorted(streams & (residual.columns | cluster.where.columns)))
            if id(cluster) not in derives:
                ctx = contexts[info.query]
                derives[id(cluster)] = cluster_derive(
                    cluster.derived, ctx.query.input_stream(ctx.recordings).columns, info.files)
            derive = derives[id(cluster)]
            needs = set(derived.values()) | (streams & cluster.where.columns)
            computes = derive is not None and bool(needs & derive.streams)
            member = Member(info.query, step_plan, cluster.where, shares.get(info.query), passes,
                            derive if needs else None, derived, reads, computes)
            prepared[info.run_id] = member, live, version, at.removals
        members = [m for m, *_ in prepared.values()]
        lo, hi = members[0].plan.batches[0][1], members[0].plan.batches[-1][2]
        files = overlapping(first.files, lo, hi)
        run_of = {i.query: i for i in infos}

        def run_part(part: list[Member]) -> dict[str, list[BatchReport]]:
            """The part's Spark job, then its runs' commits (each resumable on its own)."""
            rows = per_task(runner.spark, [0],
                            lambda _: shared_part(part, files, first.buckets))
            reports = {}
            for m in part:
                info = run_of[m.name]
                _, live, version, removals = prepared[info.run_id]
                steps = collect_files(m.plan, [r for r in rows if r[QUERY] == m.name])
                reports[m.name] = runner.commit(info, m.plan, group, steps, live, version,
                                                started, removals)[0]
            return reports

        # one Spark job per part, side by side: the runs of a part that is done commit while
        # the other parts' tasks still run
        tasks = parts(members, first.buckets,
                      work_of(plan, {q: c.family for q, c in contexts.items()}))
        self.tasks += len(tasks)
        self.derived_computed += sum(
            d.computed for part in tasks
            for d in {id(m.derive): m.derive for m in part if m.computes}.values())
        with ThreadPoolExecutor(len(tasks)) as pool:
            reports = {q: r for done in pool.map(run_part, tasks) for q, r in done.items()}
        return {i.query: reports[i.query] for i in infos}


@dataclass
class SharedRuns:
    """The shared-run strategy of the run lifecycle: the sharable runs of one shared plan, each
    group of batches one Spark job per part of the runs behind (:meth:`SharedReplay._run_group`)."""

    shared: SharedReplay
    plan: SharedPlan
    runs: list[RunInfo]

    def run_group(self, group: list[int], members: list[RunProgress]
                  ) -> dict[str, list[BatchReport]]:
        """Run and commit ``group`` of the members' runs in shared jobs."""
        reports = self.shared._run_group(self.plan, members, group)
        return {p.info.run_id: reports[p.info.query] for p in members}


def replay_queries(runner: Replay, names: list[str], plan: str | None, version: int | None,
                   share: bool, say: Callable[[str], None]) -> list[tuple[RunInfo, pa.Table]]:
    """``reprise replay Q1 Q2 ...``: each query's run and manifest, replayed as one shared run
    (queries on one recording, or stages over one upstream query) or, with ``share`` False, one
    after another."""
    named_once(names)  # before any run is prepared
    if share:
        one_input(runner.catalog, names)
    shared = SharedReplay(runner)
    infos = (shared.prepare(names, plan=plan, version=version) if share
             else [runner.prepare(name, plan=plan, version=version) for name in names])
    for info in infos:
        done = runner.manifest(info.run_id).num_rows
        say(f"run {info.run_id}: {info.recording} v{info.input_version}, {info.total} events, "
            f"plan {info.plan} -> {info.batches} batches" + resume_note(done, info.batches + 1))
    manifests = (shared.run(infos, say=say) if share
                 else {i.run_id: runner.run(i) for i in infos})
    return [(info, manifests[info.run_id]) for info in infos]

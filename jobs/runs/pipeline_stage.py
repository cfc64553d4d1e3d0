"""A pipeline stage's run: a query that reads another query's output (``input: {query: NAME}``).

Preparing a stage's run first replays its upstream (recursively, so a whole chain) at the
pinned recording version and batch plan, through the one run lifecycle: the upstream's run of
that version, plan and definition has a fixed id, so a completed one is reused as it is and an
interrupted one resumes. The stage's input is then written once into its run as the Delta table
``runs/<run>/input``: the upstream run's output rows in emission order (batch by batch, within a
batch in the upstream family's order), which numbers them (the arrival sequence). The
upstream's manifest records how many rows each of its batches emitted (``rows_out``); those
counts are the stage's cut points, so stage batch ``b`` consumes upstream batch ``b``'s output
(the upstream's end-of-input rows are the stage's last batch, before its own end of input). The
input table's commit names the upstream run (``reprise.upstream``) and the version of its
output that was read (``reprise.upstream_output``). Stages over one upstream replayed together
read its output once (:class:`UpstreamOutput`) and write each one's input table from it.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Protocol

import pyarrow as pa

from engine import batch_plans as plans
from engine.specs import QuerySpec
from jobs.execution.arrival import input_index
from jobs.execution.derived_columns import exchange_for
from jobs.execution.fused_steps import stream_rows
from jobs.runs.run_commits import commit_rows
from jobs.runs.run_context import RunContext
from jobs.runs.run_info import ReplayError, RunInfo, existing_run, fingerprint
from jobs.runs.run_segments import save_run
from jobs.runtime.parallelism import bucket_count
from jobs.settings import Settings
from jobs.storage import DeltaStorage, Txn
from jobs.warehouse import Warehouse


class Replay(Protocol):
    """What a stage's preparation needs of the runner (:class:`~jobs.runs.replay.Replay`)."""

    spark: object
    storage: DeltaStorage
    warehouse: Warehouse
    settings: Settings
    exchange: str

    def prepare(self, query_name: str, plan: str | None = None, run_id: str | None = None,
                version: int | None = None) -> RunInfo: ...

    def run(self, info: RunInfo) -> pa.Table: ...

    def manifest(self, run_id: str) -> pa.Table: ...


#: Commit metadata of a stage's input table: the upstream run, and its output version read.
UPSTREAM_RUN, UPSTREAM_OUTPUT = "reprise.upstream", "reprise.upstream_output"
#: The app transaction (after the run id) of a fused stage's input table's commits.
FUSED_INPUT = "fused-input"


@dataclass(frozen=True)
class UpstreamOutput:
    """An upstream run's output as its stages read it: the version of its output table read
    and the rows in emission order (:func:`~jobs.execution.fused_steps.stream_rows`, the same
    for every stage of that upstream)."""

    run_id: str
    version: int
    rows: pa.Table


def read_output(replay: Replay, query: QuerySpec, upstream: RunInfo) -> UpstreamOutput:
    """The output of ``upstream``'s run (its latest version) as the stage ``query`` reads it."""
    source = replay.warehouse.run_table(upstream.run_id, "output")
    version = replay.storage.version(source)
    return UpstreamOutput(upstream.run_id, version,
                          stream_rows(query, replay.storage.read_arrow(source, version)))


def stage_over(replay: Replay, ctx: RunContext, upstream: RunInfo, run_id: str | None,
               make_id: Callable[[str, dict[str, int], plans.BatchSpec, str], str],
               read: Callable[[], UpstreamOutput] | None = None) -> RunInfo:
    """Make (or load) the run of the stage ``ctx`` over the complete run ``upstream`` of its
    upstream query (see :func:`jobs.runs.pipeline_fusion.prepare_stage`); ``read`` gives the
    upstream's output when a new run needs it (default: read it now)."""
    query = ctx.query
    assert query.upstream is not None
    spec = plans.parse_plan(upstream.plan)
    fp = fingerprint(query, ctx.operator)
    if run_id is None:
        run_id = make_id(query.name, upstream.sources, spec, reading(fp, upstream.run_id))
    info = existing_run(replay.warehouse.run_dir(run_id) / "run.json", query.name, fp)
    if info is not None:
        read = upstream_read(replay, info)
        now = (upstream.run_id,
               replay.storage.version(replay.warehouse.run_table(upstream.run_id, "output")))
        if read != now:
            raise ReplayError(f"run {run_id!r} read run {read[0]!r} of query "
                              f"{query.upstream.query.name!r} at output version {read[1]}, "
                              f"not run {now[0]!r} at version {now[1]}; choose another "
                              "--run-id")
        return info
    input_path = replay.warehouse.run_table(run_id, "input")
    pinned = write_stage_input(replay, query, upstream, input_path, run_id,
                               read() if read is not None else None)
    files = input_index(replay.storage, input_path, pinned)
    cuts = stage_cuts(replay, upstream)
    if cuts[-1] != sum(f.rows for f in files):
        raise ReplayError(f"run {upstream.run_id!r}: its manifest counts {cuts[-1]} output "
                          f"rows but its output table holds {sum(f.rows for f in files)}; "
                          "replay the upstream query with another --run-id")
    info = RunInfo(run_id=run_id, query=query.name, fingerprint=fp,
                   recording=query.upstream.query.name, input_path=input_path,
                   input_version=pinned, plan=upstream.plan, cuts=cuts,
                   files=[asdict(f) for f in files],
                   buckets=bucket_count(replay.spark, replay.settings),
                   operator=f"{ctx.operator.name}@{ctx.operator.version}",
                   query_spec=query.raw, sources=dict(upstream.sources),
                   exchange=exchange_for(ctx, replay.exchange, [asdict(f) for f in files]),
                   created=datetime.now(UTC).isoformat(timespec="seconds"))
    replay.warehouse.run_dir(run_id).mkdir(parents=True, exist_ok=True)
    save_run(replay, info)
    return info


def reading(fp: str, upstream_run_id: str) -> str:
    """What a stage's default run id hashes: its definition's fingerprint ``fp`` and the
    upstream run it reads (a fresh chain's upstream run, or a continued one, of one recording
    version are different runs, so the stages over them are too)."""
    return hashlib.sha256(f"{fp}/{upstream_run_id}".encode()).hexdigest()[:10]


def stage_cuts(replay: Replay, upstream: RunInfo) -> list[int]:
    """The cut points of a stage over ``upstream``'s output: the running sum of the rows each
    upstream batch emitted (its manifest's ``rows_out``), the end-of-input flush included."""
    manifest = replay.manifest(upstream.run_id)
    if manifest.num_rows != upstream.batches + 1:
        raise ReplayError(f"run {upstream.run_id!r} is not complete ({manifest.num_rows} of "
                          f"{upstream.batches + 1} batches); replay it first")
    counts = manifest.sort_by("batch").column("rows_out").to_pylist()
    return [0, *itertools.accumulate(counts)]


def write_stage_input(replay: Replay, query: QuerySpec, upstream: RunInfo, target: str,
                      run_id: str, output: UpstreamOutput | None = None) -> int:
    """Write the stage's input table once (idempotent: an app transaction of the run) from the
    upstream run's ``output`` (default: read now); its version."""
    if output is None:
        output = read_output(replay, query, upstream)
    assert output.run_id == upstream.run_id
    return commit_input(replay.storage, target, output.rows, Txn(f"{run_id}/input", 0),
                         input_metadata(upstream.run_id, output.version, run_id))


def fused_input_batch(replay: Replay, target: str, run_id: str) -> int | None:
    """The last upstream batch whose rows the input table ``target`` of the fused stage's run
    ``run_id`` holds (None: none yet; see :func:`append_stage_input`)."""
    if not replay.storage.exists(target):
        return None
    return replay.storage.txn_version(target, f"{run_id}/{FUSED_INPUT}")


def append_stage_input(replay: Replay, upstream: RunInfo, target: str, run_id: str,
                       rows: pa.Table, last: int) -> None:
    """Append to the input table ``target`` of a fused stage's run ``run_id`` its upstream's
    output ``rows`` of a group (emission order) up to the upstream's batch ``last``, once (an
    app transaction whose version is ``last``); each commit names the upstream run and the
    version of its output table now (after its commit of ``last``), as
    :func:`write_stage_input`'s does."""
    output = replay.storage.version(replay.warehouse.run_table(upstream.run_id, "output"))
    commit_input(replay.storage, target, rows, Txn(f"{run_id}/{FUSED_INPUT}", last),
                  input_metadata(upstream.run_id, output, run_id))


def commit_input(storage: DeltaStorage, target: str, rows: pa.Table, txn: Txn,
                 metadata: dict[str, str], remove: list[str] | None = None) -> int:
    """Append ``rows`` to the input table ``target`` once (the app transaction ``txn``), the
    live files ``remove`` dropped in the same commit, as the run's own tables are written (no
    Delta writer, which loads the table at every call), even with no rows, so that the commit
    records the transaction and what was read; the version holding them."""
    version, _ = commit_rows(storage, target, rows, txn, metadata, remove=remove, force=True)
    return storage.version(target) if version is None else version


def input_metadata(upstream_run_id: str, output_version: int, run_id: str) -> dict[str, str]:
    """The metadata of a commit of the input table of the stage's run ``run_id``: the upstream
    run and the version of its output table the rows were read from (what
    :func:`upstream_read` reads back)."""
    return {UPSTREAM_RUN: upstream_run_id, UPSTREAM_OUTPUT: str(output_version),
            "reprise.run": run_id}


def upstream_read(replay: Replay, info: RunInfo, version: int | None = None
                  ) -> tuple[str | None, int | None]:
    """The upstream run a stage's run reads and the version of its output table that was read
    ((None, None): the run reads a recording); ``version``: as version ``version`` of the
    run's input table holds it (default: the latest)."""
    storage = replay.storage
    if not info.input_path.endswith("/input") or not storage.exists(info.input_path):
        return None, None
    for entry in storage.history(info.input_path):
        if version is not None and int(entry["version"]) > version:
            continue
        meta = storage.commit_metadata(entry)
        if UPSTREAM_RUN in meta:
            return meta[UPSTREAM_RUN], int(meta[UPSTREAM_OUTPUT])
    return None, None


def upstream_run(replay: Replay, info: RunInfo) -> str | None:
    """The upstream run a stage's run reads (None: the run reads a recording)."""
    return upstream_read(replay, info)[0]

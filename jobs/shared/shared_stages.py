"""Pipeline stages over one upstream query replayed together: queries on one stream.

The upstream's run at the pinned version and plan is replayed first (reused when complete);
its output is then read once, and each stage's input table (the record of what the stage read,
which ``reprise validate`` checks it against) is written from that one read. The stages' runs
are then the members of a shared run as queries on a recording are
(:class:`jobs.shared.shared_run.SharedReplay`): each group of batches reads the stream once, from
the first stage's input files (the stages' input tables hold the same rows in the same files).
A stage left fused with its upstream by an earlier, interrupted replay resumes on its own.
"""

from __future__ import annotations

from engine.catalog import Catalog
from jobs.runs.pipeline_fusion import fused_stage
from jobs.runs.pipeline_stage import UpstreamOutput, read_output, stage_over
from jobs.runs.replay import Replay, run_id_of
from jobs.runs.run_info import RunInfo


def one_upstream(catalog: Catalog, names: list[str]) -> str | None:
    """The query whose output every named query reads (None: one of them reads a recording,
    or they read different queries)."""
    upstreams = {q.upstream.query.name if q.upstream is not None else None
                 for q in map(catalog.query, names)}
    return upstreams.pop() if len(upstreams) == 1 else None


def prepare_stages(runner: Replay, names: list[str], plan: str | None, version: int | None,
                   upstream: RunInfo | None = None) -> tuple[list[RunInfo], int]:
    """The runs of the stages ``names`` (each over one upstream query, :func:`one_upstream`;
    the run ids of their standalone replays) over the upstream's complete run (``upstream``:
    that run, e.g. a continued one; default: its run at ``plan`` and ``version``, replayed or
    reused), and how many times its output was read (1 when a stage's run was made, else 0)."""
    contexts = [runner.context(name) for name in names]
    reader = contexts[0].query
    assert reader.upstream is not None
    if upstream is None:
        upstream = runner.prepare(reader.upstream.query.name, plan=plan, version=version)
        runner.run(upstream)  # (a complete run is reused: nothing to run)
    read: list[UpstreamOutput] = []

    def output() -> UpstreamOutput:
        if not read:
            read.append(read_output(runner, reader, upstream))
        return read[0]

    infos = [fused_stage(runner, ctx, upstream, None, run_id_of)
             or stage_over(runner, ctx, upstream, None, run_id_of, output)
             for ctx in contexts]
    return infos, len(read)

"""The life of a run, the same for every run strategy (a single replay, a continuation, a shared
replay of several queries).

:func:`run_lifecycle` takes the runs a strategy pinned (their ``run.json``: pinned input
versions, batch plan) and, holding every run's lock: deletes the files killed attempts staged
and never committed, finishes a rewind a continuation left undone, runs the remaining batch
groups (each run resumes after the last batch its manifest holds; the strategy runs and commits
a group of its runs, idempotently), then deletes the files this call's own attempts staged and
did not commit, and checkpoints the runs' tables.

A strategy provides the runs and how a group of batches of some of them runs
(:class:`RunStrategy`); the lifecycle provides everything around it.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

import pyarrow as pa

from jobs.runs.run_commits import BatchReport
from jobs.runs.run_info import ReplayError, RunInfo
from jobs.runs.run_lock import run_lock
from jobs.runs.run_segments import RunTables, finish_rewind, output_removals
from jobs.storage import DeltaStorage
from jobs.storage.orphans import clean_and_mark, marks, remove_leftovers

#: A run's tables get a Delta checkpoint at the end of a replay (or continuation) when their log
#: has this many commits after the last one: opening them never replays more log entries.
CHECKPOINT_EVERY = 20


@dataclass
class RunProgress:
    """Where one run of a lifecycle stands: its committed manifest rows (batch ``b`` is done
    when row ``b`` is there) and, for the run's next group only, the output files the commit
    of its first batch removes (:func:`~jobs.runs.run_segments.output_removals`)."""

    info: RunInfo
    manifest: pa.Table
    removals: list[str] | None = field(default=None)
    #: Starts the checkpoints of the run's tables in the background (:class:`Checkpoints`):
    #: a strategy that commits the run's last batch while other runs have work left calls it.
    tables_final: Callable[[], None] = field(default=lambda: None)

    @property
    def next_batch(self) -> int:
        """The first batch not committed yet (``info.batches + 1`` when the run is done)."""
        return self.manifest.num_rows

    @property
    def state_version(self) -> int | None:
        """The state table's version after the last committed batch (None before any)."""
        if not self.manifest.num_rows:
            return None
        return self.manifest.column("state_version")[-1].as_py()


class Runner(RunTables, Protocol):
    """What the lifecycle needs of the runner (:class:`~jobs.runs.replay.Replay`)."""

    def tables(self, info: RunInfo) -> dict[str, str]: ...

    def group_of(self, info: RunInfo, first: int) -> list[int]: ...


class RunStrategy(Protocol):
    """A way to run batches, plugged into :func:`run_lifecycle`.

    ``runs``: the runs it drives, already made or loaded (their inputs pinned in ``run.json``);
    runs that share one group run at the same cut points. ``run_group`` runs and commits
    ``group`` (consecutive batch ids, :meth:`Runner.group_of`) of each of ``members`` (runs of
    ``runs`` whose next batch is ``group[0]``), each through
    :meth:`~jobs.runs.replay.Replay.commit` (per-batch app transactions, the manifest last),
    and returns each member's batch reports by run id.
    """

    runs: list[RunInfo]

    def run_group(self, group: list[int], members: list[RunProgress]
                  ) -> dict[str, list[BatchReport]]: ...


def run_lifecycle(runner: Runner, strategy: RunStrategy, *, clean: bool = True,
                  on_batch: Callable[[RunInfo, BatchReport], None] | None = None
                  ) -> dict[str, pa.Table]:
    """Run the remaining batches of every run of ``strategy`` (then each run's end-of-input
    flush); returns each run's manifest by run id. Holds every run's lock (another process
    replaying one makes this raise ``RunBusy``); deletes the files killed task attempts staged
    but never committed first (``clean=False``: the caller knows there is none, e.g. a
    continuation of a complete run) and, once the last batch is committed, those this call's
    task attempts staged and did not commit (it looks only at what was staged and committed
    since it started); ``on_batch`` hears each committed batch."""
    runs = strategy.runs
    tables = [path for info in runs for path in runner.tables(info).values()]
    with ExitStack() as locks:
        for info in runs:
            locks.enter_context(run_lock(runner.warehouse.run_dir(info.run_id), info.run_id))
        started = clean_and_mark(tables) if clean else marks(tables)
        for info in runs:
            finish_rewind(runner, info)  # a continuation stopped before its rewind was done
        with Checkpoints(runner.storage) as checkpoints:
            manifests = _run_groups(runner, strategy, on_batch, checkpoints)
            remove_leftovers(tables, since=started)
            checkpoints.start(tables)
    return manifests


def _run_groups(runner: Runner, strategy: RunStrategy,
                on_batch: Callable[[RunInfo, BatchReport], None] | None,
                checkpoints: Checkpoints) -> dict[str, pa.Table]:
    """The loop over batch groups: each time, the runs furthest behind run their next group."""
    progress = {}
    for info in strategy.runs:
        manifest = runner.manifest(info.run_id)
        progress[info.run_id] = RunProgress(
            info, manifest, output_removals(runner, info, manifest),
            partial(checkpoints.start, list(runner.tables(info).values())))
    while True:
        behind = [p for p in progress.values() if p.next_batch <= p.info.batches]
        if not behind:
            break
        first = min(p.next_batch for p in behind)
        members = [p for p in behind if p.next_batch == first]
        group = runner.group_of(members[0].info, first)
        reports = strategy.run_group(group, members)
        for p in members:
            for report in reports.get(p.info.run_id, []):
                if on_batch:
                    on_batch(p.info, report)
            p.manifest, p.removals = runner.manifest(p.info.run_id), None
            if p.next_batch <= first:  # (else this loop never ends)
                raise ReplayError(
                    f"run {p.info.run_id}: its manifest does not list batches "
                    f"{group[0]}-{group[-1]} after they ran: its tables are "
                    "inconsistent; replay the query with another --run-id")
    return {run_id: p.manifest for run_id, p in progress.items()}


class Checkpoints:
    """The checkpoints of a lifecycle's tables: each table whose log has
    :data:`CHECKPOINT_EVERY` commits after its last checkpoint gets one, written in a thread
    (delta-rs writes it without holding the interpreter's lock), so that the tables of a run
    done early are checkpointed while the other runs step, and all tables side by side at the
    end; leaving the ``with`` block waits for every one (a failed one raises then)."""

    def __init__(self, storage: DeltaStorage) -> None:
        self._storage = storage
        self._pool = ThreadPoolExecutor(16)
        self._started: dict[str, Future] = {}

    def start(self, tables: list[str]) -> None:
        """Check ``tables`` (those not started yet) and write their checkpoints."""
        for table in tables:
            if table not in self._started:
                self._started[table] = self._pool.submit(self._storage.checkpoint, table,
                                                         CHECKPOINT_EVERY)

    def __enter__(self) -> Checkpoints:
        return self

    def __exit__(self, failed: type | None, *_: object) -> None:
        try:
            if failed is None:
                for future in self._started.values():
                    future.result()
        finally:
            self._pool.shutdown(cancel_futures=True)


__all__ = ["CHECKPOINT_EVERY", "Checkpoints", "RunProgress", "RunStrategy", "Runner",
           "run_lifecycle"]

"""Progress of a replay: a bar that moves per committed batch on a terminal, one line per Spark
job otherwise (logs, CI)."""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from jobs.settings import Settings

if TYPE_CHECKING:
    from jobs.runs.run_commits import BatchReport


def interactive(settings: Settings) -> bool:
    """True on a terminal (or with ``REPRISE_PROGRESS=1``): draw bars instead of lines."""
    return sys.stdout.isatty() or settings.progress


def bar(console: Console, settings: Settings) -> Progress:
    """A progress bar for counted work (disabled off a terminal)."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=False,
                    disable=not interactive(settings))


class ReplayProgress:
    """Counts a run's batches: :meth:`committed` after each batch's output commit (called from
    the commit thread), :meth:`done` for each manifest row (a Spark job's batches arrive
    together, after its manifest commit)."""

    def __init__(self, console: Console, settings: Settings, total: int, completed: int):
        self.console, self.total, self.completed = console, total, completed
        self._lock = threading.Lock()
        self._job: list[BatchReport] = []  # reports of the job whose manifest was just committed
        self._bar = bar(console, settings) if interactive(settings) else None
        self._task = None

    def __enter__(self) -> ReplayProgress:
        if self._bar is not None:
            self._bar.__enter__()
            self._task = self._bar.add_task("replay", total=self.total, completed=self.completed)
        return self

    def __exit__(self, *exc: object) -> None:
        self._flush()
        if self._bar is not None:
            done = max(self._bar.tasks[0].completed, self.completed)
            self._bar.update(self._task, completed=done)
            self._bar.__exit__(*exc)

    def committed(self, batch: int) -> None:
        """A batch's output is committed (its manifest row follows with its job's)."""
        self._flush()
        if self._bar is not None:
            with self._lock:
                done = max(self._bar.tasks[0].completed, min(self.total, batch + 1))
                self._bar.update(self._task, completed=done)

    def done(self, report: BatchReport) -> None:
        """A batch's manifest row is committed."""
        with self._lock:
            self._job.append(report)

    def _flush(self) -> None:
        with self._lock:
            job, self._job = self._job, []
        if not job:
            return
        self.completed += len(job)
        if self._bar is not None:  # the bar follows the commits
            return
        first, last = job[0].batch, job[-1].batch
        span = f"batch {first}" if first == last else f"batches {first}-{last}"
        self.console.print(
            f"replay: {span} committed ({self.completed}/{self.total}): "
            f"{sum(r.rows_in for r in job):,} events, {sum(r.rows_out for r in job):,} output "
            "rows", highlight=False)

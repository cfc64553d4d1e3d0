"""Replay progress: the bar moves per committed batch; without a terminal, one line per job."""

from __future__ import annotations

import io

from rich.console import Console

from jobs.cli.progress import ReplayProgress
from jobs.runs.listing import resume_note
from jobs.runs.run_commits import BatchReport
from jobs.settings import Settings


def report(batch: int) -> BatchReport:
    return BatchReport(batch=batch, kind="batch", rows_in=10, rows_out=2, late=0, quarantined=0,
                       state_rows=1, state_bytes=8, duration_s=0.0)


def run_jobs(progress: ReplayProgress, jobs: list[list[int]], seen: list[float]) -> None:
    """Feed ``jobs`` (batch ids per Spark job) as the replay does: commits, then manifest rows."""
    for job in jobs:
        for batch in job:
            progress.committed(batch)
            if progress._bar is not None:
                seen.append(progress._bar.tasks[0].completed)
        for batch in job:
            progress.done(report(batch))


def test_without_a_terminal_each_job_prints_one_line(monkeypatch):
    monkeypatch.delenv("REPRISE_PROGRESS", raising=False)
    out = io.StringIO()
    console = Console(file=out, width=200)
    with ReplayProgress(console, Settings(), total=7, completed=0) as progress:
        run_jobs(progress, [[0, 1, 2], [3, 4, 5], [6]], [])
    lines = out.getvalue().splitlines()
    assert lines == ["replay: batches 0-2 committed (3/7): 30 events, 6 output rows",
                     "replay: batches 3-5 committed (6/7): 30 events, 6 output rows",
                     "replay: batch 6 committed (7/7): 10 events, 2 output rows"]


def test_on_a_terminal_the_bar_moves_with_every_committed_batch_within_a_job():
    seen: list[float] = []
    console = Console(file=io.StringIO(), width=100, force_terminal=True)
    with ReplayProgress(console, Settings(progress=True), total=5, completed=1) as progress:
        run_jobs(progress, [[1, 2, 3, 4]], seen)  # one job of four batches, resumed after one
        assert progress._bar.tasks[0].completed == 5
    assert seen == [2, 3, 4, 5]


def test_a_complete_run_says_so_instead_of_resuming():
    assert resume_note(5, 5) == " (already complete: nothing to do)"
    assert resume_note(4, 5) == " (resuming after 4 of 5 committed)"
    assert resume_note(0, 5) == ""

"""``reprise follow QUERY``: continue a query's run as new recording versions arrive."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from jobs.runs.continuation import continue_query
from jobs.runs.replay import Replay
from jobs.runs.run_segments import describe


@dataclass
class FollowReport:
    """What a follow did: the run it extended last and the segments it added."""

    run_id: str = ""
    segments: int = 0
    stopped_by: str = ""  # "signal", "max segments", "duration"


def follow(replay: Replay, query: str, *, every_s: float = 5.0, plan: str | None = None,
           max_segments: int | None = None, duration_s: float | None = None,
           log: Callable[[str], None] = print) -> FollowReport:
    """Continue ``query``'s run (:func:`~jobs.runs.continuation.run_to_continue`: an
    interrupted one is finished first; replay it first when there is none) every
    ``every_s`` seconds while the recording gains versions; a line per segment. The first
    SIGINT or SIGTERM stops it after the segment under way (every batch it committed stays; the
    run is resumable in any case); a second one interrupts at once."""
    report = FollowReport()
    stop = threading.Event()
    restore = _on_signals(stop, log)
    started = time.monotonic()  # the --for bound only; never reaches a run's output
    try:
        while not stop.is_set():
            begun = time.monotonic()
            result = continue_query(replay, query, plan=plan, log=log)
            report.run_id = result.info.run_id
            if result.segment is not None:
                report.segments += 1
                why = f" (fresh run: {result.fresh_reason})" if result.fresh_reason else ""
                log(f"{result.info.run_id}: {describe(result.segment)}{why}, "
                    f"{time.monotonic() - begun:.1f} s")
            if max_segments is not None and report.segments >= max_segments:
                report.stopped_by = "max segments"
                break
            left = None if duration_s is None else duration_s - (time.monotonic() - started)
            if left is not None and left <= 0:
                report.stopped_by = "duration"
                break
            stop.wait(every_s if left is None else min(every_s, left))
        report.stopped_by = report.stopped_by or "signal"
    finally:
        restore()
    return report


def _on_signals(stop: threading.Event, log: Callable[[str], None]) -> Callable[[], None]:
    """Make SIGINT and SIGTERM set ``stop`` once (then act as before); returns the undo."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None  # signals reach the main thread only: nothing to install
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum: int, frame) -> None:
        log(f"{signal.Signals(signum).name}: stopping after the segment under way "
            "(again to interrupt now; the run stays resumable)")
        stop.set()
        for s, h in before.items():
            signal.signal(s, h)

    for s in before:
        signal.signal(s, handler)

    def restore() -> None:
        for s, h in before.items():
            signal.signal(s, h)

    return restore


__all__ = ["FollowReport", "follow"]

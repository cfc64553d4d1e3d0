"""Benchmark: ``follow`` continues one run through many segments in flat memory and time.

A vitals recording (``--keys`` patients, ``--history`` events in 2 commits) is replayed once
(the run ``follow`` then continues). ``follow`` runs in this process with no pause between
checks; after each segment it reports, one commit of ``--events`` new events (the recording's
first events, one day later per commit) is appended, so each check finds one new version and adds
one segment, ``--segments`` in all. Every ``--every`` segments the resident memory (RSS) of this
process (the follower) is read, and of its child processes (Spark's JVM and Python workers). The
time of a segment runs from the end of the commit appended to its segment line.

Targets: the follower's RSS grows less than 10 % from the end of warm-up (segment 200, or the
second sample) to the last segment, and the mean time per segment of the last ``--every``
segments is at most 1.5 times that of the second ``--every``. ``python -m
benchmarks.follow_memory`` (``--segments 100 --every 20`` for a short try).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from engine.catalog import load_catalog
from jobs.runs.follow import follow
from jobs.runs.replay import Replay

from .continuation import new_commit
from .harness import ROOT, bench
from .results import record

QUERY = "vitals_hr_1m"
GROWTH_TARGET = 0.10
TIME_TARGET = 1.5


def rss_kib(pid: int) -> int:
    """Resident memory of process ``pid`` in KiB (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def descendants(pid: int) -> list[int]:
    """The processes started by ``pid`` and by them, from ``/proc``."""
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            children = [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
        for child in children:
            found += [child, *descendants(child)]
    return found


class Segments:
    """``follow``'s log: on each segment line, times it, samples memory every ``every`` and
    appends the next commit (until ``segments``)."""

    def __init__(self, replay: Replay, segments: int, every: int, events: int):
        self.replay, self.segments, self.every = replay, segments, every
        self.first = replay.storage.read_arrow(replay.warehouse.recording("vitals")).slice(
            0, events)
        self.count = 0
        self.seconds: list[float] = []
        self.samples: list[dict] = []
        self.last = time.perf_counter()

    def append(self) -> None:
        """Append the next commit; the time of the next segment starts after it."""
        new_commit(self.replay, self.first, self.count)
        self.last = time.perf_counter()

    def __call__(self, line: str) -> None:
        if ": segment " not in line:
            return
        now = time.perf_counter()
        self.seconds.append(now - self.last)
        self.count += 1
        if self.count % self.every == 0:
            me = os.getpid()
            self.samples.append({"segment": self.count, "rss_mib": round(rss_kib(me) / 1024, 1),
                                 "children_rss_mib": round(sum(
                                     rss_kib(p) for p in descendants(me)) / 1024, 1),
                                 "segment_ms": round(1000 * statistics.mean(
                                     self.seconds[-self.every:]), 1)})
            print(json.dumps(self.samples[-1]), flush=True)
        if self.count < self.segments:
            self.append()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--segments", type=int, default=1000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--keys", type=int, default=50)
    parser.add_argument("--history", type=int, default=5_000)
    parser.add_argument("--events", type=int, default=50)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    catalog = load_catalog(ROOT / "schemas")
    with bench(args.master) as b:
        warehouse = b.vitals(catalog, "follow", args.history, args.keys, 2)
        replay = Replay(b.spark, b.storage, warehouse, catalog)
        replay.run(replay.prepare(QUERY))
        segments = Segments(replay, args.segments, args.every, args.events)
        segments.append()
        started = time.perf_counter()
        report = follow(replay, QUERY, every_s=0.0, max_segments=args.segments, log=segments)
        total_s = time.perf_counter() - started
    samples = segments.samples
    base = next((s for s in samples if s["segment"] >= args.warmup), samples[min(1, len(samples)
                                                                            - 1)])
    growth = samples[-1]["rss_mib"] / base["rss_mib"] - 1
    time_ratio = samples[-1]["segment_ms"] / samples[min(1, len(samples) - 1)]["segment_ms"]
    print(f"{report.segments} segments in {total_s:.0f} s; follower RSS "
          f"{base['rss_mib']} MiB at segment {base['segment']}, {samples[-1]['rss_mib']} MiB at "
          f"{samples[-1]['segment']}: {100 * growth:+.1f} % (target < {100 * GROWTH_TARGET:.0f} "
          f"%); time per segment, last {args.every} / second {args.every}: {time_ratio:.2f} "
          f"(target <= {TIME_TARGET})")
    record("follow_memory", command=f"python -m benchmarks.follow_memory --segments "
                                    f"{args.segments} --every {args.every}",
           data_size={"segments": args.segments, "events_per_segment": args.events,
                      "history_events": args.history, "keys": args.keys},
           medians={"segment_s": statistics.median(segments.seconds),
                    "rss_mib_last": samples[-1]["rss_mib"]},
           ratio=round(1 + growth, 4),
           target=f"follower RSS at the last segment / at segment {base['segment']} < "
                  f"{1 + GROWTH_TARGET}",
           extra={"samples": samples, "time_ratio_last_to_second": round(time_ratio, 3),
                  "time_target": f"<= {TIME_TARGET}", "total_s": round(total_s, 1)})


if __name__ == "__main__":
    main()

"""Benchmark: ``reprise follow`` continues one run through many segments in flat memory and time.

A vitals recording (``--keys`` patients, ``--history`` events in 2 commits) is replayed once.
Then ``reprise follow`` runs as its own process (as a user runs it, checking every 20 ms), and
this process appends to the recording, one commit of ``--events`` new events (the recording's
first events, one day later per commit) each time the follower reports a segment, so each check
finds one new version and adds one segment, ``--segments`` in all. Every ``--every`` segments the
resident memory (RSS) of the follower is read, and of its child processes (a JVM, if it started
Spark). The time of a segment runs from the end of the commit appended to the follower's
segment line (so it includes up to one 20 ms check interval).

Targets: the follower's RSS grows less than 10 % from the end of warm-up (``--warmup``
segments) to the last segment, and the mean time per segment of the last ``--every`` segments
is at most 1.5 times that of the ``--every`` after warm-up. ``python -m
benchmarks.follow_memory`` (``--segments 100 --every 20 --warmup 40`` for a short try).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from engine.catalog import load_catalog
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


def follow_segments(replay: Replay, args: argparse.Namespace) -> tuple[list[float], list[dict]]:
    """Run ``reprise follow`` over ``replay``'s warehouse, appending a commit after each of its
    segments; (seconds of each segment, memory samples)."""
    first = replay.storage.read_arrow(replay.warehouse.recording("vitals")).slice(0, args.events)
    command = [str(Path(sys.executable).parent / "reprise"), "follow", QUERY, "--every", "20ms",
               "--max-segments", str(args.segments), "--warehouse", str(replay.warehouse.root),
               "--backend", "delta-rs", "--catalog", str(ROOT / "schemas")]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "1000"}
    seconds: list[float] = []
    samples: list[dict] = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as follower:
        new_commit(replay, first, 0)
        appended = time.perf_counter()
        for line in follower.stdout:
            if ": segment " not in line:
                continue
            seconds.append(time.perf_counter() - appended)
            count = len(seconds)
            if count % args.every == 0:
                samples.append({
                    "segment": count, "rss_mib": round(rss_kib(follower.pid) / 1024, 1),
                    "children_rss_mib": round(sum(rss_kib(p) for p in descendants(
                        follower.pid)) / 1024, 1),
                    "segment_ms": round(1000 * statistics.mean(seconds[-args.every:]), 1)})
                print(samples[-1], flush=True)
            if count < args.segments:
                new_commit(replay, first, count)
                appended = time.perf_counter()
    if follower.returncode:
        raise SystemExit(f"reprise follow exited with {follower.returncode}")
    return seconds, samples


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
    started = time.perf_counter()
    with bench(args.master) as b:
        warehouse = b.vitals(catalog, "follow", args.history, args.keys, 2)
        replay = Replay(b.spark, b.storage, warehouse, catalog)
        replay.run(replay.prepare(QUERY))
        seconds, samples = follow_segments(replay, args)
    total_s = time.perf_counter() - started
    base = next(s for s in samples if s["segment"] >= args.warmup)
    after = next((s for s in samples if s["segment"] > args.warmup), samples[-1])
    growth = samples[-1]["rss_mib"] / base["rss_mib"] - 1
    time_ratio = samples[-1]["segment_ms"] / after["segment_ms"]
    print(f"{len(seconds)} segments in {total_s:.0f} s; follower RSS {base['rss_mib']} MiB at "
          f"segment {base['segment']}, {samples[-1]['rss_mib']} MiB at {samples[-1]['segment']}: "
          f"{100 * growth:+.1f} % (target < {100 * GROWTH_TARGET:.0f} %); time per segment, "
          f"segments to {samples[-1]['segment']} / to {after['segment']}: {time_ratio:.2f} "
          f"(target <= {TIME_TARGET})")
    record("follow_memory", command=f"python -m benchmarks.follow_memory --segments "
                                    f"{args.segments} --every {args.every} --warmup {args.warmup}",
           data_size={"segments": args.segments, "events_per_segment": args.events,
                      "history_events": args.history, "keys": args.keys},
           medians={"segment_s": statistics.median(seconds),
                    "rss_mib_last": samples[-1]["rss_mib"]},
           ratio=round(1 + growth, 4),
           target=f"follower RSS at the last segment / at segment {base['segment']} < "
                  f"{1 + GROWTH_TARGET}",
           extra={"samples": samples, "time_ratio_last_to_after_warmup": round(time_ratio, 3),
                  "time_target": f"<= {TIME_TARGET}", "total_s": round(total_s, 1)})


if __name__ == "__main__":
    main()

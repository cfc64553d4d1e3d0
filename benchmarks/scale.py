"""Benchmark: a replay's cost as its buckets grow, with and without the key-hash layout.

Generates the vitals recording (default 1,000,000 events, 1,000 patients, 20 commits; written in
the key-hash layout) and a copy of it without the layout (the same rows and arrival order, as a
recording written before the layout), then times the whole command ``reprise replay
vitals_hr_1m`` (tumbling one-minute windows, one batch per commit), forced onto Spark
(``REPRISE_ENGINE=spark``, ``local[2]``, the direct exchange) with 2, 8 and 32 buckets, each
bucket count and layout in turn per round (medians of ``--rounds``): wall time, events per
second, the input bytes the bucket tasks read (``input_bytes`` of the run's ``run.json``) against
the recording's size, and the peak resident memory of the command's largest process (the
driver, the JVM or a Python worker: ``VmHWM`` sampled from ``/proc``). The target: with the
layout, 32 buckets within 15 % of the time of 2. Run with ``make bench-scale`` or ``python -m
benchmarks.scale [--events N]``. Wall-clock timing is right here (a benchmark), never in an
operator.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

from engine.catalog import load_catalog
from jobs.execution.arrival import input_index
from jobs.execution.input_files import read_range
from jobs.recordings.store import generate_recording
from jobs.storage import open_driver_storage
from jobs.warehouse import Warehouse

from .harness import ROOT, scratch_parent
from .results import command_line, record

QUERY = "vitals_hr_1m"
BUCKETS = (2, 8, 32)


def plain_copy(storage, source: Warehouse, target: Warehouse) -> None:
    """Recording ``vitals`` of ``source`` written to ``target`` commit by commit as plain
    appends (the rows in arrival order, no layout)."""
    path = source.recording("vitals")
    for f in input_index(storage, path, storage.version(path)):
        (rows,) = read_range([asdict(f)], storage.schema(path).names, [], f.offset,
                             f.offset + f.rows)
        storage.write(rows.table.cast(storage.schema(path)), target.recording("vitals"),
                      mode="append")


def recording_bytes(storage, warehouse: Warehouse) -> int:
    """The recording's data files' bytes at its latest version."""
    path = warehouse.recording("vitals")
    return sum(f.size for f in storage.live_files(path))


def _parents() -> dict[int, int]:
    """Every process's parent (from ``/proc``)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            found[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return found


def _peak_kb(pid: int) -> int:
    """The peak resident memory of process ``pid`` so far (``VmHWM``), 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def watch_peaks(root: int, stop: threading.Event, peaks: dict[int, int]) -> None:
    """Until ``stop``: the peak resident memory of ``root`` and each of its descendants."""
    while not stop.is_set():
        parents, tree, grown = _parents(), {root}, True
        while grown:
            more = {p for p, parent in parents.items() if parent in tree} - tree
            tree |= more
            grown = bool(more)
        for pid in tree:
            peaks[pid] = max(peaks.get(pid, 0), _peak_kb(pid))
        stop.wait(0.25)


def replay_once(warehouse: Warehouse, catalog: Path, buckets: int, run_id: str, master: str
                ) -> dict:
    """One ``reprise replay`` forced onto Spark: wall seconds, the peak resident memory (MB) of
    its largest process (driver, JVM, Python worker; sampled from ``/proc`` every 0.25 s), and
    the input bytes its tasks read."""
    env = {**os.environ, "REPRISE_ENGINE": "spark", "REPRISE_BUCKETS": str(buckets),
           "REPRISE_EXCHANGE": "direct", "REPRISE_SPARK_MASTER": master,
           "REPRISE_WAREHOUSE": str(warehouse.root), "REPRISE_CATALOG": str(catalog),
           "REPRISE_DELTA_BACKEND": "delta-rs"}
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "jobs.cli.app", "replay", QUERY,
                              "--plan", "commit", "--run-id", run_id], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    stop, peaks = threading.Event(), {}
    watcher = threading.Thread(target=watch_peaks, args=(child.pid, stop, peaks), daemon=True)
    watcher.start()
    err = child.communicate()[1].decode()
    seconds = time.perf_counter() - started
    stop.set()
    watcher.join()
    if child.returncode:
        raise SystemExit(f"reprise replay failed ({child.returncode}): {err[-2000:]}")
    info = json.loads((warehouse.run_dir(run_id) / "run.json").read_text())
    return {"s": seconds, "peak_mb": max(peaks.values(), default=0) / 1024,
            "bytes": info["input_bytes"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmups", type=int, default=1)
    args = parser.parse_args()
    catalog_dir = ROOT / "schemas"
    catalog = load_catalog(catalog_dir)
    storage = open_driver_storage("delta-rs")
    root = Path(scratch_parent()) / f"reprise-scale-{os.getpid()}"
    laid, plain = Warehouse(root / "laid"), Warehouse(root / "plain")
    generate_recording(storage, laid, catalog, "vitals", keys=args.keys, events=args.events,
                       seed=1, commits=args.commits)
    plain_copy(storage, laid, plain)
    sizes = {"laid": recording_bytes(storage, laid), "plain": recording_bytes(storage, plain)}
    runs: dict[str, list[dict]] = {}
    for i in range(args.rounds + args.warmups):  # (warm-up rounds: not counted)
        for layout, warehouse in (("laid", laid), ("plain", plain)):
            for buckets in BUCKETS:
                done = replay_once(warehouse, catalog_dir, buckets, f"r{i}-b{buckets}",
                                   args.master)
                if i >= args.warmups:
                    runs.setdefault(f"{layout}_{buckets}", []).append(done)
                print(layout, buckets, {k: round(v, 2) for k, v in done.items()}, flush=True)
    result: dict = {"events": args.events, "keys": args.keys, "commits": args.commits,
                    "master": args.master, "rounds": args.rounds, "warmups": args.warmups,
                    "recording_bytes": sizes}
    medians = {}
    for name, done in runs.items():
        seconds = statistics.median(d["s"] for d in done)
        layout = name.split("_")[0]
        medians[f"{name}_s"] = seconds
        result[name] = {"s": round(seconds, 2), "events_per_s": round(args.events / seconds),
                        "input_bytes": done[0]["bytes"],
                        "bytes_over_recording": round(done[0]["bytes"] / sizes[layout], 3),
                        "peak_mb": round(max(d["peak_mb"] for d in done))}
    ratio = round(medians["laid_32_s"] / medians["laid_2_s"], 3)
    result["laid_32_over_2"] = ratio
    result["plain_32_over_2"] = round(medians["plain_32_s"] / medians["plain_2_s"], 3)
    print(json.dumps(result, indent=1))
    record("scale", command=command_line(),
           data_size={"events": args.events, "keys": args.keys, "commits": args.commits},
           medians=medians, ratio=ratio,
           target="in the key-hash layout, 32 buckets within 15 % of the time of 2 "
                  "(ratio <= 1.15); input bytes read within 10 % of the recording's",
           extra=result)
    subprocess.run(["rm", "-rf", str(root)], check=False)


if __name__ == "__main__":
    main()

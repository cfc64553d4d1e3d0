"""Benchmark: a replay's cost as its buckets and its recording grow, in and out of the layout.

Generates the vitals recording (default 1,000,000 events, 1,000 patients, 20 commits; written in
the key-hash layout) and a copy of it without the layout (the same rows and arrival order, as a
recording written before the layout), then times the whole command ``reprise replay QUERY`` (one
batch per commit) forced onto Spark (``REPRISE_ENGINE=spark``, ``local[2]`` or, with
``--cluster``, a 2-worker standalone cluster on 127.0.0.1; the direct exchange) with 2, 8 and 32
buckets, for the tumbling (``vitals_hr_1m``), sliding (``vitals_hr_10m_sliding``) and QRE episode
(``vitals_episode_max_avg``) queries (the copy without the layout: tumbling only), each case in
turn per round (medians of ``--rounds``). Then a large recording (``--large``, default
10,000,000 events, 5,000 patients, 50 commits; 0: none) replayed by tumbling on Spark with 2 and
32 buckets and stepped in the driver (``REPRISE_ENGINE=driver``, one core), once each. Per case:
wall time, events per second, the input bytes the tasks read (``input_bytes`` of the run's
``run.json``) against the recording's size, and the peak resident memory (``VmHWM`` sampled from
``/proc``) of the driver process, of the JVM(s) and of the largest Python worker. Targets: with
the layout, 32 buckets within 15 % of the time of 2; Spark on 2 cores within 1.5x the driver's
time on the large recording. Run with ``make bench-scale`` (about ten minutes on a quiet
2-core machine) or ``python -m benchmarks.scale [--events N] [--large N] [--cluster]``;
100,000,000 events (``--large 100000000``) need about 4 GB of disk and several minutes per
replay. Wall-clock timing is right here (a benchmark), never in an operator.
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
from jobs.storage import open_driver_storage
from jobs.warehouse import Warehouse
from tests.support.standalone import StandaloneCluster, cluster_env

from .harness import ROOT, scratch_parent, vitals_warehouse
from .results import command_line, record

#: The queries by the family they stand for.
QUERIES = {"tumbling": "vitals_hr_1m", "sliding": "vitals_hr_10m_sliding",
           "episodes": "vitals_episode_max_avg"}
BUCKETS = (2, 8, 32)
#: The bucket counts of the large recording's Spark runs.
LARGE_BUCKETS = (2, 32)


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


def _role(pid: int, driver: int) -> str:
    """What process ``pid`` is to a replay: its ``driver``, a JVM or a Python worker."""
    if pid == driver:
        return "driver"
    try:
        return "jvm" if Path(f"/proc/{pid}/comm").read_text().strip() == "java" else "worker"
    except OSError:
        return "worker"


def watch_peaks(root: int, stop: threading.Event, peaks: dict[int, tuple[str, int]],
                others: tuple[int, ...] = ()) -> None:
    """Until ``stop``: the peak resident memory (kB) and the role (:func:`_role`) of ``root``
    and each of its descendants, and of the descendants of ``others`` (a cluster's workers:
    their executors and Python workers)."""
    while not stop.is_set():
        parents, tree, grown = _parents(), {root, *others}, True
        while grown:
            more = {p for p, parent in parents.items() if parent in tree} - tree
            tree |= more
            grown = bool(more)
        for pid in tree - set(others):
            # (the role each time: a launcher script becomes the JVM it starts)
            peaks[pid] = _role(pid, root), max(peaks.get(pid, ("", 0))[1], _peak_kb(pid))
        stop.wait(0.25)


def replay_once(warehouse: Warehouse, catalog: Path, query: str, buckets: int, engine: str,
                run_id: str, env: dict[str, str], others: tuple[int, ...] = ()) -> dict:
    """One ``reprise replay`` of ``query`` forced onto ``engine`` (``spark`` or ``driver``):
    wall seconds, the peak resident memory (MB) of the driver process, of the largest JVM and
    of the largest Python worker (sampled from ``/proc`` every 0.25 s), and the input bytes
    its tasks read."""
    env = {**env, "REPRISE_ENGINE": engine, "REPRISE_BUCKETS": str(buckets),
           "REPRISE_EXCHANGE": "direct", "REPRISE_WAREHOUSE": str(warehouse.root),
           "REPRISE_CATALOG": str(catalog), "REPRISE_DELTA_BACKEND": "delta-rs"}
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "jobs.cli.app", "replay", query,
                              "--plan", "commit", "--run-id", run_id], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    stop, peaks = threading.Event(), {}
    watcher = threading.Thread(target=watch_peaks, args=(child.pid, stop, peaks, others),
                               daemon=True)
    watcher.start()
    err = child.communicate()[1].decode()
    seconds = time.perf_counter() - started
    stop.set()
    watcher.join()
    if child.returncode:
        raise SystemExit(f"reprise replay failed ({child.returncode}): {err[-2000:]}")
    info = json.loads((warehouse.run_dir(run_id) / "run.json").read_text())
    peak = {role: max((kb for r, kb in peaks.values() if r == role), default=0) / 1024
            for role in ("driver", "jvm", "worker")}
    return {"s": seconds, **{f"{role}_mb": mb for role, mb in peak.items()},
            "bytes": info["input_bytes"]}


def summary(done: list[dict], events: int, size: int) -> dict:
    """A case's runs as the result reports them: median seconds (unrounded, as recorded),
    events per second, input bytes (and over the recording's size), the peak memory of each
    kind of process."""
    seconds = statistics.median(d["s"] for d in done)
    return {"s": seconds, "events_per_s": round(events / seconds),
            "input_bytes": done[0]["bytes"],
            "bytes_over_recording": round(done[0]["bytes"] / size, 3),
            **{f"peak_{role}_mb": round(max(d[f"{role}_mb"] for d in done))
               for role in ("driver", "jvm", "worker")}}


def small_cases(args: argparse.Namespace) -> list[tuple[str, str, int]]:
    """(query's family, layout, buckets) of the rounds: every query in the layout, tumbling
    without it too."""
    return [(family, layout, buckets) for family in args.queries
            for layout in (("laid", "plain") if family == "tumbling" else ("laid",))
            for buckets in BUCKETS]


def run_cases(args: argparse.Namespace, env: dict[str, str], others: tuple[int, ...],
              root: Path) -> dict:
    """Every case of the benchmark (see the module's docstring): its result."""
    catalog_dir = ROOT / "schemas"
    catalog = load_catalog(catalog_dir)
    storage = open_driver_storage("delta-rs")
    laid = vitals_warehouse(storage, catalog, root, "laid", args.events, args.keys, args.commits)
    plain = Warehouse(root / "plain")
    plain_copy(storage, laid, plain)
    houses = {"laid": laid, "plain": plain}
    sizes = {name: recording_bytes(storage, w) for name, w in houses.items()}
    runs: dict[str, list[dict]] = {}
    for i in range(args.rounds + args.warmups):  # (warm-up rounds: not counted)
        for family, layout, buckets in small_cases(args):
            name = f"{family}_{layout}_{buckets}"
            done = replay_once(houses[layout], catalog_dir, QUERIES[family], buckets, "spark",
                               f"r{i}-{name}", env, others)
            if i >= args.warmups:
                runs.setdefault(name, []).append(done)
            print(name, {k: round(v, 2) for k, v in done.items()}, flush=True)
    result: dict = {"events": args.events, "keys": args.keys, "commits": args.commits,
                    "master": "2-worker standalone" if args.cluster else args.master,
                    "rounds": args.rounds, "warmups": args.warmups, "recording_bytes": sizes}
    for name, done in runs.items():
        result[name] = summary(done, args.events, sizes[name.split("_")[1]])
    for family in args.queries:
        result[f"{family}_32_over_2"] = round(result[f"{family}_laid_32"]["s"]
                                              / result[f"{family}_laid_2"]["s"], 3)
    if args.large:
        subprocess.run(["rm", "-rf", str(root / "laid"), str(root / "plain")], check=False)
        big = vitals_warehouse(storage, catalog, root, "large", args.large, args.large_keys,
                        args.large_commits)
        size = recording_bytes(storage, big)
        result["large"] = {"events": args.large, "keys": args.large_keys,
                           "commits": args.large_commits, "recording_bytes": size}
        cases = [("spark", b) for b in LARGE_BUCKETS] + [("driver", LARGE_BUCKETS[0])]
        for engine, buckets in cases:
            name = f"large_{engine}" + (f"_{buckets}" if engine == "spark" else "")
            done = replay_once(big, catalog_dir, QUERIES["tumbling"], buckets, engine, name,
                               env, others)
            print(name, {k: round(v, 2) for k, v in done.items()}, flush=True)
            result["large"][name] = summary([done], args.large, size)
        large = result["large"]
        large["spark_over_driver"] = round(large[f"large_spark_{LARGE_BUCKETS[0]}"]["s"]
                                           / large["large_driver"]["s"], 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--large", type=int, default=10_000_000)
    parser.add_argument("--large-keys", type=int, default=5000)
    parser.add_argument("--large-commits", type=int, default=50)
    parser.add_argument("--queries", nargs="+", choices=sorted(QUERIES), default=list(QUERIES))
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--cluster", action="store_true",
                        help="on a 2-worker standalone cluster on 127.0.0.1 (1 core each)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmups", type=int, default=1)
    args = parser.parse_args()
    if "tumbling" not in args.queries:
        parser.error("--queries must include tumbling (the layout's comparison)")
    root = Path(scratch_parent()) / f"reprise-scale-{os.getpid()}"
    try:
        if args.cluster:
            with StandaloneCluster(root / "cluster") as cluster:
                env = {**cluster_env(cluster.url, root / "unused"), "PYTHONPATH": str(ROOT)}
                workers = tuple(p.pid for n, p in cluster.processes.items() if n != "master")
                result = run_cases(args, env, workers, root)
        else:
            result = run_cases(args, {**os.environ, "REPRISE_SPARK_MASTER": args.master}, (),
                               root)
    finally:
        subprocess.run(["rm", "-rf", str(root)], check=False)
    print(json.dumps(result, indent=1))
    medians = {f"{name}_s": value["s"] for name, value in result.items()
               if isinstance(value, dict) and "s" in value}
    medians.update({f"{name}_s": value["s"] for name, value in result.get("large", {}).items()
                    if isinstance(value, dict)})
    record("scale", command=command_line(),
           data_size={"events": args.events, "keys": args.keys, "commits": args.commits,
                      "large_events": args.large},
           medians=medians, ratio=result["tumbling_32_over_2"],
           target="in the key-hash layout, 32 buckets within 15 % of the time of 2 "
                  "(ratio <= 1.15); input bytes read within 10 % of the recording's; on the "
                  "large recording, Spark on 2 cores within 1.5x the driver's time",
           extra=result)


if __name__ == "__main__":
    main()

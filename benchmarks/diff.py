"""Benchmark: ``reprise diff`` of two sliding-window runs vs a pandas merge of both outputs.

Two queries over one recording of N events (N / 100 keys, one event per key every 10 s): a
sliding window (size 20 s, slide 10 s: about one output row per event), and the same window
over the events with ``v != 7`` (0.5 % of them dropped, about 1 % of the rows changed). Both
are replayed; then, in this process, the diff (:mod:`jobs.diff`: streamed by identity-hash
bucket) and a pandas outer merge of the two output tables read whole on the window identity,
every shared value compared with the same tolerance. After a warm-up call of each (the first
call pays one-off imports), each is timed in three alternating rounds, and its peak resident
memory above what the process held before is sampled every 5 ms; the medians are reported. Two
sizes show whether the peak grows with the output. Run with ``make bench`` or
``python -m benchmarks.diff [--events N N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from engine.catalog import load_catalog
from jobs.diff.run_diff import diff_sides
from jobs.diff.sides import resolve_sides
from jobs.runs.replay import Replay
from jobs.runs.validate import ABS_TOL, REL_TOL
from jobs.storage import DeltaStorage
from jobs.warehouse import Warehouse

from .harness import bench
from .results import command_line, record

RECORDING = """\
name: ev
key: k
time: ts
columns: {k: string, ts: timestamp, v: int, x: double}
"""
QUERY = """\
name: {name}
kind: window
input: ev
lateness: 5s
{where}batch: {{by: commit}}
query:
  window: {{type: sliding, size: 20s, slide: 10s}}
  aggregates: {{n: count(), total: sum(v), mean: avg(x), hi: max(v)}}
"""
IDENTITY = ["k", "window_start", "window_end"]
#: Measured rounds of each, after a warm-up round; the medians are reported.
ROUNDS = 3


def events(n: int, seed: int = 1) -> pa.Table:
    """``n`` events of ``n / 100`` keys in time order, one per key every 10 s."""
    rng = np.random.default_rng(seed)
    keys = max(1, n // 100)
    i = np.arange(n)
    micros = 1_700_000_000_000_000 + (i // keys) * 10_000_000 + (i % keys)
    return pa.table({
        "k": pa.array(np.char.add("k", (i % keys).astype(str)).astype(object), pa.string()),
        "ts": pa.array(micros, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "v": pa.array(rng.integers(0, 200, n), pa.int64()),
        "x": pa.array(rng.normal(0, 50, n), pa.float64())})


def resident() -> int:
    """This process's resident memory in bytes."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def release() -> None:
    """Give freed memory back to the system, so that the next peak starts from what is held."""
    gc.collect()
    pa.default_memory_pool().release_unused()
    with contextlib.suppress(OSError):  # (not glibc)
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def measured(work: Callable[[], object]) -> tuple[object, float, int]:
    """``work()``'s result, seconds and peak resident bytes above the start."""
    release()
    start = peak = resident()
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, resident())
            time.sleep(0.005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.perf_counter()
    try:
        result = work()
    finally:
        seconds = time.perf_counter() - started
        done.set()
        sampler.join()
    return result, seconds, max(peak, resident()) - start


def pandas_merge(storage: DeltaStorage, paths: tuple[str, str]) -> dict[str, int]:
    """The peer: both outputs read whole into pandas, outer-merged on the window identity,
    every shared value compared."""
    a, b = (storage.read_arrow(p).to_pandas() for p in paths)
    merged = a.merge(b, on=IDENTITY, how="outer", suffixes=("_a", "_b"), indicator=True)
    both = (merged["_merge"] == "both").to_numpy()
    values = [c for c in a.columns if c not in IDENTITY and c != "batch"]
    changed = np.zeros(len(merged), dtype=bool)
    for c in values:
        x, y = merged[f"{c}_a"], merged[f"{c}_b"]
        if x.dtype.kind == "f" or y.dtype.kind == "f":  # (the tolerance of reprise validate)
            same = np.isclose(x, y, rtol=REL_TOL, atol=ABS_TOL) | (x.isna() & y.isna())
        else:
            same = (x == y) | (x.isna() & y.isna())
        changed |= ~np.asarray(same, dtype=bool)
    return {"only_a": int((merged["_merge"] == "left_only").sum()),
            "only_b": int((merged["_merge"] == "right_only").sum()),
            "changed": int((changed & both).sum())}


def one_size(root: Path, b, n: int) -> dict:
    """Replay both queries over ``n`` events, then measure the diff and the pandas merge."""
    schemas = root / "schemas"
    (schemas / "recordings").mkdir(parents=True)
    (schemas / "queries").mkdir()
    (schemas / "recordings" / "ev.yaml").write_text(RECORDING)
    (schemas / "queries" / "all_events.yaml").write_text(QUERY.format(name="all_events",
                                                                       where=""))
    (schemas / "queries" / "some_events.yaml").write_text(QUERY.format(
        name="some_events", where="where: v != 7\n"))
    warehouse = Warehouse(root / "warehouse")
    table = events(n)
    for part in np.array_split(np.arange(n), 10):
        b.storage.write(table.slice(int(part[0]), len(part)), warehouse.recording("ev"),
                        mode="append")
    runner = Replay(b.spark, b.storage, warehouse, load_catalog(schemas))
    started = time.perf_counter()
    a, other = resolve_sides(runner, "all_events", "some_events", lambda line: None)
    replay_s = time.perf_counter() - started
    paths = tuple(runner.warehouse.run_table(s.info.run_id, "output") for s in (a, other))
    works = {"diff": lambda: diff_sides(runner, a, other, limit=20),
             "pandas": lambda: pandas_merge(b.storage, paths)}
    for work in works.values():  # (warm-up: the first call of each pays its imports)
        work()
    rounds: dict[str, list[tuple[object, float, int]]] = {name: [] for name in works}
    for _ in range(ROUNDS):
        for name, work in works.items():
            rounds[name].append(measured(work))
    report, peer = rounds["diff"][0][0], rounds["pandas"][0][0]
    (diff_s, diff_peak), (pandas_s, pandas_peak) = (
        (statistics.median(r[1] for r in rounds[name]),
         statistics.median(r[2] for r in rounds[name])) for name in works)
    counts = report.tables["output"].counts
    found = {"only_a": counts.only_a, "only_b": counts.only_b, "changed": counts.changed}
    if found != peer:
        raise SystemExit(f"the diff found {found} but the pandas merge {peer}")
    rows = counts.only_a + counts.changed + counts.equal
    return {"events": n, "output_rows": rows, "changed_rows": counts.changed,
            "changed_share": round(counts.changed / max(rows, 1), 4),
            "replays_s": round(replay_s, 1), "diff_s": round(diff_s, 2),
            "pandas_s": round(pandas_s, 2), "diff_peak_mib": round(diff_peak / 2**20),
            "pandas_peak_mib": round(pandas_peak / 2**20)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, nargs="+", default=[250_000, 1_000_000])
    args = parser.parse_args()
    results = []
    with bench() as b:
        for n in args.events:
            results.append(one_size(b.root / f"n{n}", b, n))
            print(json.dumps(results[-1]), flush=True)
    largest = results[-1]
    medians = {f"{name}_{r['events']}": r[name] for r in results
               for name in ("diff_s", "pandas_s", "diff_peak_mib", "pandas_peak_mib")}
    record("diff", command=command_line(), data_size={"events": args.events},
           medians=medians, ratio=round(largest["pandas_s"] / largest["diff_s"], 2),
           target="diff faster than a pandas merge; its peak memory flat across sizes",
           extra={"sizes": results})
    for r in results:
        print(f"diff over {r['output_rows']:,} output rows ({r['changed_rows']:,} changed): "
              f"{r['diff_s']} s, peak +{r['diff_peak_mib']} MiB; pandas merge {r['pandas_s']} s,"
              f" peak +{r['pandas_peak_mib']} MiB")


if __name__ == "__main__":
    main()

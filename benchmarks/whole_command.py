"""Benchmark: the whole ``reprise replay`` command, timed from outside, as a user runs it.

Each timed run is a new process running ``reprise replay QUERY --run-id NEW`` over a generated
recording (the interpreter's start, the catalog, the pinned recording, the engine choice,
Spark's start if it is chosen, the batches and their commits, the run's clean-up):

- ``--events`` (1,000,000 by default; 20 commits, 1,000 keys) with ``--engine auto``: a tumbling
  window (``vitals_hr_1m``), a sliding window of 500 s every 5 s (the sliding benchmark's query,
  ``benchmarks/peers/bench_sliding.yaml``) and ``ticks_v_shapes`` (over as many ticks). Targets:
  at most 2 s, 3 s and 3 s on 2 cores;
- ``--big-events`` (10,000,000 by default; 50 commits, 5,000 keys; 0 leaves it out), tumbling,
  with ``--engine auto``, ``spark`` and ``driver``. Target: auto at most 1.1 times the faster of
  the other two.

The runs take turns in every round (the order reversed every other round) after
``--warmups`` untimed rounds; figures are medians over ``--rounds``. With ``--pyflink PYTHON``
(an interpreter with ``apache-flink``, see ``benchmarks/peers/``), PyFlink's whole process for the
sliding (``hop``) and V-shape queries over the same events is timed beside them; without it the
result says PyFlink was not measured. With ``--cluster`` only the ``--big-events`` comparison
runs, its Spark (and ``auto``'s choice) a 2-worker standalone cluster on 127.0.0.1 (1 core each,
the driver on this machine), recorded as ``whole_command_cluster``. Wall-clock timing is right
here (a benchmark), never in an operator.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.standalone import StandaloneCluster, cluster_env

from .harness import ROOT, scratch_parent
from .results import command_line, record

#: The sliding query (500 s every 5 s): the one the PyFlink peer's ``hop`` computes.
SLIDING = ROOT / "benchmarks" / "peers" / "bench_sliding.yaml"
#: The 1M-event cases: name -> (query, recording); all with ``--engine auto``.
SMALL = {"tumbling": ("vitals_hr_1m", "vitals"), "sliding": ("bench_sliding", "vitals"),
         "v_shapes": ("ticks_v_shapes", "ticks")}
#: Targets of the 1M-event cases, seconds.
SMALL_TARGETS = {"tumbling": 2.0, "sliding": 3.0, "v_shapes": 3.0}
#: The big recording's engines; auto's target: at most this times the faster of the others.
BIG_ENGINES, BIG_SLACK = ("auto", "spark", "driver"), 1.1

_GENERATE = """
import sys
from pathlib import Path
from engine.catalog import load_catalog
from jobs.recordings.store import generate_recording
from jobs.storage import open_driver_storage
from jobs.warehouse import Warehouse
root, catalog, name, events, keys, commits = sys.argv[1:7]
generate_recording(open_driver_storage("delta-rs"), Warehouse(Path(root)),
                   load_catalog(Path(catalog)), name, keys=int(keys), events=int(events), seed=1,
                   commits=int(commits))
"""


def _env(**extra: str) -> dict[str, str]:
    """This process's environment without the settings that would change the engine's choice."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("REPRISE_ENGINE", "REPRISE_LOCAL_EVENTS", "REPRISE_EXCHANGE",
                        "REPRISE_BUCKETS", "REPRISE_HANDOVER_AFTER")}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def generate(root: Path, catalog: Path, name: str, events: int, keys: int, commits: int) -> None:
    """Generate recording ``name`` (seed 1) into the warehouse ``root``."""
    subprocess.run([sys.executable, "-c", _GENERATE, str(root), str(catalog), name, str(events),
                    str(keys), str(commits)], cwd=ROOT, env=_env(), check=True)


def replay_s(root: Path, catalog: Path, query: str, engine: str, run_id: str,
             master: dict[str, str] | None = None) -> float:
    """The wall time of ``reprise replay QUERY --engine ENGINE`` as a new run (removed after);
    ``master``: the environment of another Spark master (:func:`cluster_env`)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", "from jobs.cli.entry import run; run()", "replay",
                           query, "--run-id", run_id, "--engine", engine, "--warehouse",
                           str(root), "--catalog", str(catalog)], cwd=ROOT,
                          env={**_env(), **(master or {})},
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"reprise replay {query} --engine {engine} failed:\n{done.stderr}")
    shutil.rmtree(root / "runs" / run_id, ignore_errors=True)
    return seconds


def pyflink_s(python: str, mode: str, csv: Path) -> float:
    """PyFlink's whole process for ``pyflink_queries.py MODE CSV`` (JVM start included)."""
    started = time.perf_counter()
    subprocess.run([python, str(ROOT / "benchmarks" / "peers" / "pyflink_queries.py"), mode,
                    str(csv)], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - started


def export(root: Path, catalog: Path, name: str, out: Path) -> Path:
    """The recording ``name`` of ``root`` exported for PyFlink; the CSV file's path."""
    subprocess.run([sys.executable, "-m", "benchmarks.peers.export_recording", name, str(out)],
                   cwd=ROOT, env=_env(REPRISE_WAREHOUSE=str(root), REPRISE_CATALOG=str(catalog)),
                   check=True, capture_output=True)
    return out.with_suffix(".csv")


def timed_rounds(works: dict[str, object], rounds: int, warmups: int) -> dict[str, list[float]]:
    """Each work (a callable of the run's tag, returning seconds) once per round, in turns,
    the order reversed every other round; the timed rounds' seconds by work."""
    found: dict[str, list[float]] = {name: [] for name in works}
    for r in range(warmups + rounds):
        names = list(works)
        for name in reversed(names) if r % 2 else names:
            seconds = works[name](f"r{r}")  # type: ignore[operator]
            if r >= warmups:
                found[name].append(seconds)
                print(f"round {r - warmups + 1} {name}: {seconds:.2f} s", flush=True)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--big-events", type=int, default=10_000_000,
                        help="the auto/spark/driver comparison's events (0: leave it out)")
    parser.add_argument("--big-keys", type=int, default=5_000)
    parser.add_argument("--big-commits", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmups", type=int, default=1)
    parser.add_argument("--pyflink", help="a Python interpreter with apache-flink installed")
    parser.add_argument("--cluster", action="store_true",
                        help="the --big-events comparison only, its Spark a 2-worker "
                             "standalone cluster on 127.0.0.1 (1 core each)")
    args = parser.parse_args()
    if args.cluster:
        args.events = 0
    with tempfile.TemporaryDirectory(prefix="whole-", dir=scratch_parent()) as scratch, \
            contextlib.ExitStack() as stack:
        root = Path(scratch)
        master = None
        if args.cluster:
            url = stack.enter_context(StandaloneCluster(root / "cluster")).url
            master = {k: v for k, v in cluster_env(url, root / "big").items()
                      if k.startswith(("REPRISE_SPARK", "SPARK_"))}
        catalog = root / "catalog"
        shutil.copytree(ROOT / "schemas", catalog)
        shutil.copy(SLIDING, catalog / "queries" / SLIDING.name)
        small, big = root / "small", root / "big"
        works: dict[str, object] = {}
        if args.events:
            for name in ("vitals", "ticks"):
                generate(small, catalog, name, args.events, args.keys, args.commits)
            works |= {case: (lambda tag, q=query: replay_s(small, catalog, q, "auto",
                                                           f"{q}-{tag}"))
                      for case, (query, _) in SMALL.items()}
        if args.big_events:
            generate(big, catalog, "vitals", args.big_events, args.big_keys, args.big_commits)
            works |= {f"big_{engine}": (lambda tag, e=engine: replay_s(
                big, catalog, "vitals_hr_1m", e, f"big-{e}-{tag}", master))
                for engine in BIG_ENGINES}
        peer = "not measured: no PyFlink interpreter (--pyflink PYTHON)"
        if args.pyflink:
            csvs = {mode: export(small, catalog, name, root / "peer" / name)
                    for mode, name in (("hop", "vitals"), ("v_shapes", "ticks"))}
            works |= {f"pyflink_{mode}": (lambda _, m=mode, c=csv: pyflink_s(args.pyflink, m, c))
                      for mode, csv in csvs.items()}
            peer = "whole process of pyflink_queries.py (JVM start included)"
        found = timed_rounds(works, args.rounds, args.warmups)
    medians = {f"{name}_s": round(statistics.median(t), 3) for name, t in found.items()}
    met = {case: medians[f"{case}_s"] <= target for case, target in SMALL_TARGETS.items()
           if f"{case}_s" in medians}
    ratio = None
    if args.big_events:
        ratio = round(medians["big_auto_s"] / min(medians["big_spark_s"],
                                                  medians["big_driver_s"]), 2)
        met["big_auto"] = ratio <= BIG_SLACK
    print(json.dumps(medians, indent=1), f"\ntargets met: {met}")
    record("whole_command_cluster" if args.cluster else "whole_command", command=command_line(),
           data_size={"events": args.events, "keys": args.keys, "commits": args.commits,
                      "big_events": args.big_events, "big_keys": args.big_keys,
                      "big_commits": args.big_commits},
           medians=medians, ratio=ratio,
           target="whole `reprise replay` at --events (auto): tumbling <= 2 s, sliding <= 3 s, "
                  "v_shapes <= 3 s; at --big-events, auto / min(spark, driver) <= 1.1",
           extra={"rounds": args.rounds, "warmups": args.warmups, "met": met, "pyflink": peer,
                  "runs": found})


if __name__ == "__main__":
    main()

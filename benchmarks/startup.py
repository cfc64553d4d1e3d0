"""Benchmark: where the start of a small replay forced onto Spark goes.

For a replay of a small recording (1,000 events by default) forced onto Spark, each round starts
two processes per source tree (``--before``, e.g. a ``git worktree`` at an earlier commit, then
this tree, alternately, so that both see the same load):

- a driver that does what ``reprise replay`` does, one step after the other, and times each step
  around the calls, using Spark's own timestamps where there are some: the interpreter's start
  and imports, the JVM's launch (to the JVM's start time, from its runtime bean), the JVM to its
  Py4J gateway, the SparkContext, the session (with Delta's extension), the Python workers'
  start and imports (the worker daemon's start, read from ``/proc``, to the first task's first
  line), the first job's scheduling (the rest of a one-task job), the Delta reads before the
  first batch (catalog, pinned versions, the input's file index, the batch plan) and the work
  (the batches and their commits);
- the whole command, ``reprise replay QUERY`` (``REPRISE_ENGINE=spark``), timed from outside.

``spark_start_s`` is the driver's interpreter start and imports, the session and the first job,
one after the other: the breakdown of what a replay forced onto Spark pays before its work. The
command itself overlaps some of them (the Python workers start while the session is made), so
the headline is the whole command's time: the median over the rounds of each round's
before/after ratio of ``whole_command_s`` (the machine's load changes more from round to round
than within one). Wall-clock timing is right
here (a benchmark), never in an operator. Without ``--before`` only this tree is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .harness import ROOT, scratch_parent
from .results import record
from .whole_command import generate

_CHILD = """
import time
started = time.time()
import json, os, sys
from pathlib import Path
from engine.catalog import load_catalog
from jobs.runs.replay import Replay
from jobs.runtime.spark_session import get_spark
from jobs.settings import load_settings
from jobs.storage import open_storage
from jobs.warehouse import Warehouse
import pyspark.context
root, query, run_id = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
marks = {}


def timed(name, call):
    def wrapper(*args, **kwargs):
        result = call(*args, **kwargs)
        marks[name] = time.time()
        return result
    return wrapper


pyspark.context.launch_gateway = timed("gateway", pyspark.context.launch_gateway)
try:  # (a tree that launches the JVM itself, its stderr to a log file)
    import jobs.runtime.jvm_stderr as quiet
    quiet.launch_gateway = timed("gateway", quiet.launch_gateway)
except (ImportError, AttributeError):
    pass
pyspark.context.SparkContext._initialize_context = timed(
    "context", pyspark.context.SparkContext._initialize_context)
imported = time.time()
settings = load_settings()
spark = get_spark(settings=settings)
session = time.time()
sc = spark.sparkContext
jvm = sc._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime() / 1000


def probe(_):
    import os, time
    now = time.time()
    with open(f"/proc/{os.getppid()}/stat") as f:
        since_boot = int(f.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    return [(now, now - (uptime - since_boot))]


submitted = time.time()
task, daemon = sc.parallelize([0], 1).flatMap(probe).collect()[0]
first_job = time.time()
replay = Replay(spark, open_storage(spark, settings=settings), Warehouse(root),
                load_catalog(Path("schemas")), settings=settings)
info = replay.prepare(query, run_id=run_id)
prepared = time.time()
replay.run(info)
done = time.time()
print("PHASES " + json.dumps({
    "interpreter_and_imports_s": imported - float(sys.argv[4]),
    "jvm_launch_s": jvm - imported,
    "jvm_to_gateway_s": marks["gateway"] - jvm,
    "spark_context_s": marks["context"] - marks["gateway"],
    "session_s": session - marks["context"],
    "workers_start_and_imports_s": task - daemon,
    "first_job_scheduling_s": (first_job - submitted) - (task - daemon),
    "reads_before_first_batch_s": prepared - first_job,
    "work_s": done - prepared,
    "spark_start_s": first_job - float(sys.argv[4]),
}))
"""

#: Spark forced on both trees (the older one's switch, then the engine setting).
FORCE_SPARK = {"REPRISE_LOCAL_EVENTS": "0", "REPRISE_ENGINE": "spark"}


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, **FORCE_SPARK, "PYTHONPATH": str(tree)}


def phases(tree: Path, root: Path, query: str, run_id: str) -> dict[str, float]:
    """One driver process of ``tree`` timing each step of a replay forced onto Spark."""
    done = subprocess.run([sys.executable, "-c", _CHILD, str(root), query, run_id,
                           repr(time.time())], cwd=tree, env=_env(tree), check=True,
                          capture_output=True, text=True)
    line = next(x for x in done.stdout.splitlines() if x.startswith("PHASES "))
    return json.loads(line.removeprefix("PHASES "))


def whole_command(tree: Path, root: Path, query: str, run_id: str) -> float:
    """The wall time of ``reprise replay QUERY`` of ``tree`` forced onto Spark (through the
    tree's console script: ``jobs.cli.entry`` where it has one, else ``jobs.cli.app``)."""
    entry = "jobs.cli.entry" if (tree / "jobs" / "cli" / "entry.py").is_file() else "jobs.cli.app"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"from {entry} import run; run()", "replay", query,
                    "--run-id", run_id, "--warehouse", str(root), "--catalog",
                    str(tree / "schemas")], cwd=tree, env=_env(tree), check=True,
                   capture_output=True, text=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", type=Path, help="another source tree, measured in turns")
    parser.add_argument("--query", default="vitals_hr_1m")
    parser.add_argument("--events", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    trees = {"after": ROOT} if args.before is None else {"before": args.before.resolve(),
                                                          "after": ROOT}
    found: dict[str, list[dict[str, float]]] = {tag: [] for tag in trees}
    with tempfile.TemporaryDirectory(prefix="startup-", dir=scratch_parent()) as scratch:
        root = Path(scratch)
        generate(root, ROOT / "schemas", "vitals", args.events, keys=10, commits=5)
        for r in range(args.rounds):
            for tag in reversed(trees) if r % 2 else trees:  # alternate who goes first
                tree = trees[tag]
                measured = phases(tree, root, args.query, f"phases-{tag}-{r}")
                measured["whole_command_s"] = whole_command(tree, root, args.query,
                                                            f"cli-{tag}-{r}")
                found[tag].append(measured)
                print(f"round {r + 1} {tag}: " + ", ".join(
                    f"{k.removesuffix('_s')} {v:.2f}" for k, v in measured.items()), flush=True)
    medians = {f"{tag}.{key}": round(statistics.median(m[key] for m in runs), 3)
               for tag, runs in found.items() for key in runs[0]}
    ratio = None
    if args.before is not None:  # paired by round: the load changes more between rounds
        for key in ("spark_start_s", "whole_command_s"):
            medians[f"before/after.{key}"] = round(statistics.median(
                b[key] / a[key] for b, a in zip(found["before"], found["after"], strict=True)), 2)
        ratio = medians["before/after.whole_command_s"]
    print(json.dumps(medians, indent=1), f"\nwhole command before/after: {ratio}")
    record("startup", command=f"python -m benchmarks.startup --events {args.events}"
           + (" --before <base tree>" if args.before else ""),
           data_size={"events": args.events, "keys": 10, "commits": 5, "query": args.query},
           medians=medians, ratio=ratio,
           target="whole command of a 1,000-event replay forced onto Spark: before/after >= 2 "
                  "(median of the rounds' ratios)",
           extra={"rounds": args.rounds, "runs": found})


if __name__ == "__main__":
    main()

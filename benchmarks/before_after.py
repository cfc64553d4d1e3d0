"""Benchmark: one query's replay with two source trees of Reprise (e.g. a commit before a change,
extracted with ``git archive``, and the working tree), in alternating rounds on the same data.

Each round starts one process per tree (``--before`` first, then this tree), which starts its
Spark session and runs one untimed warm-up replay (JVM, workers), then times ``--replays``
fresh replays of the query (new run ids, batch plan ``commit``) and prints their times; the
recording is generated once, by this tree, into a scratch warehouse both read. Prints the
median replay time of each tree and their ratio. Example (issue 19's ``ticks_v_shapes``)::

    git archive c70faee | tar -x -C /tmp/before
    python -m benchmarks.before_after --before /tmp/before --recording ticks \\
        --query ticks_v_shapes --events 1000000 --keys 1000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from .harness import ROOT

_CHILD = """
import json, sys, time
from pathlib import Path
from engine.catalog import load_catalog
from jobs.runs.replay import Replay
from jobs.runtime.spark_session import get_spark
from jobs.storage import open_storage
from jobs.warehouse import Warehouse
root, query, replays, tag = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
spark = get_spark("local[2]")
replay = Replay(spark, open_storage(spark), Warehouse(root), load_catalog(Path("schemas")))
replay.run(replay.prepare(query, plan="commit", run_id=f"warm-{tag}"))
times = []
for i in range(replays):
    started = time.perf_counter()
    replay.run(replay.prepare(query, plan="commit", run_id=f"timed-{tag}-{i}"))
    times.append(time.perf_counter() - started)
print("TIMES " + json.dumps(times))
"""

_GENERATE = """
import sys
from pathlib import Path
from engine.catalog import load_catalog
from jobs.recordings.store import generate_recording
from jobs.runtime.spark_session import get_spark
from jobs.storage import open_storage
from jobs.warehouse import Warehouse
root, kind, keys, events = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
spark = get_spark("local[2]")
generate_recording(open_storage(spark), Warehouse(root), load_catalog(Path("schemas")), kind,
                   keys=keys, events=events, seed=1, commits=20)
"""


def _python(tree: Path, code: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=tree, env=env, check=True,
                          capture_output=True, text=True)
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", type=Path, required=True, help="the other source tree")
    parser.add_argument("--recording", default="ticks")
    parser.add_argument("--query", default="ticks_v_shapes")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--replays", type=int, default=2, help="timed replays per process")
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": ROOT}
    with tempfile.TemporaryDirectory(prefix="reprise-before-after-") as scratch:
        root = Path(scratch)
        _python(ROOT, _GENERATE, str(root), args.recording, str(args.keys), str(args.events))
        times: dict[str, list[float]] = {tag: [] for tag in trees}
        for r in range(args.rounds):
            for tag, tree in trees.items():
                out = _python(tree, _CHILD, str(root), args.query, str(args.replays),
                              f"{tag}{r}")
                line = next(x for x in out.splitlines() if x.startswith("TIMES "))
                times[tag] += json.loads(line.removeprefix("TIMES "))
                print(f"round {r + 1}: {tag} {times[tag][-args.replays:]}", flush=True)
    median = {tag: statistics.median(t) for tag, t in times.items()}
    print(json.dumps({"query": args.query, "events": args.events, "keys": args.keys,
                      "before": str(args.before), "before_s": round(median["before"], 2),
                      "after_s": round(median["after"], 2),
                      "speed_up": round(median["before"] / median["after"], 1),
                      "times": times}, indent=1))


if __name__ == "__main__":
    main()

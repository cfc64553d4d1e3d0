"""Benchmark: the tumbling benchmark on a 2-worker Spark standalone cluster vs ``local[2]``.

Starts a standalone master and two workers (1 core, 1 GB each) on 127.0.0.1 from the
environment's pyspark, as the cluster test does (``tests/support/standalone.py``), then runs
``benchmarks.tumbling`` with the same arguments once on the cluster and once on ``local[2]``
(each generates the same deterministic recording) and prints both in-replay times and their
ratio (issue 18's target: within 2x). Every process it starts is stopped at the end.
``python -m benchmarks.cluster [--events N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.standalone import StandaloneCluster, cluster_env

from .harness import ROOT
from .results import RESULTS_ENV, command_line, record


def tumbling(master: str, env: dict[str, str], args: argparse.Namespace) -> dict:
    """One run of the tumbling benchmark on ``master``: its JSON result."""
    command = [sys.executable, "-m", "benchmarks.tumbling", "--master", master,
               "--events", str(args.events), "--keys", str(args.keys),
               "--rounds", str(args.rounds), "--warmups", str(args.warmups)]
    with tempfile.TemporaryDirectory() as results:  # this benchmark records, not its runs
        done = subprocess.run(command, env={**env, RESULTS_ENV: results}, cwd=ROOT,
                              capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"benchmarks.tumbling on {master} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout[done.stdout.index("{"):done.stdout.index("}") + 1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmups", type=int, default=2)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="reprise-cluster-bench-"))
    local_env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        with StandaloneCluster(root / "cluster") as cluster:
            env = {**cluster_env(cluster.url, root / "unused"), "PYTHONPATH": str(ROOT)}
            on_cluster = tumbling(cluster.url, env, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    local = tumbling("local[2]", local_env, args)
    ratio = on_cluster["replay_s"] / local["replay_s"]
    record("cluster", command=command_line(),
           data_size={"events": args.events, "keys": args.keys},
           medians={"replay_cluster_s": on_cluster["replay_s"],
                    "replay_local_s": local["replay_s"]},
           ratio=round(ratio, 2), target="2-worker cluster / local[2] <= 2",
           extra={"cluster": on_cluster, "local": local})
    print(json.dumps({"cluster": on_cluster, "local": local, "ratio": round(ratio, 2)},
                     indent=1))
    print(f"{args.events:,} events: replay {on_cluster['replay_s']} s on the 2-worker cluster "
          f"({on_cluster['buckets']} buckets) vs {local['replay_s']} s on local[2] "
          f"({local['buckets']} buckets): {ratio:.2f}x (target <= 2)")


if __name__ == "__main__":
    main()

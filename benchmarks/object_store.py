"""Benchmark: the tumbling replay on an S3 warehouse against a local one, in one process.

The replay is ``benchmarks.tumbling``'s (1M events, 20 batches by default). The S3 warehouse
is on moto's S3 server on 127.0.0.1 (the tests' server), which keeps its objects in memory: the
figure is the object-store protocol's overhead (requests, conditional commits, listing the Delta
log, reading Parquet through pyarrow's S3 client), not a network's.
Medians of alternating rounds (each side once in turn, after untimed warm-ups); also the
per-batch overhead of each (a 20-batch replay of a tiny recording), where the per-commit round
trips show, and the requests per batch the S3 side sends (counted in moto's request log, over
the tiny replay and over one replay of the benchmark's events). Run with
``python -m benchmarks.object_store [--events N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import uuid
from pathlib import Path

from engine.catalog import load_catalog
from jobs.recordings.store import generate_recording
from jobs.runs.replay import Replay
from jobs.storage.filesystems import s3_client
from jobs.warehouse import Warehouse
from tests.support.s3_server import aws_env, requests_logged, s3_server

from .harness import ROOT, ReplayRuns, bench, medians
from .results import command_line, record

QUERY = "vitals_hr_1m"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmups", type=int, default=1)
    args = parser.parse_args()
    catalog = load_catalog(ROOT / "schemas")
    with tempfile.TemporaryDirectory(prefix="reprise-moto-") as logs, \
            s3_server(log=Path(logs) / "requests.log") as endpoint:
        log = Path(logs) / "requests.log"  # (moto's request log: one line a request)
        os.environ.update(aws_env(endpoint))  # (before Spark starts: its workers inherit them)
        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        s3_client().create_bucket(Bucket=bucket)
        with bench() as b:
            runs = {}
            for side in ("local", "s3"):
                for name, events, keys in (("big", args.events, args.keys),
                                           ("tiny", args.batches * 10, 10)):
                    wh = (Warehouse(b.root / name) if side == "local"
                          else Warehouse.at(f"s3://{bucket}/{name}"))
                    generate_recording(b.storage, wh, catalog, "vitals", keys=keys,
                                       events=events, seed=1, commits=args.batches)
                    runs[f"{side}_{name}"] = ReplayRuns(Replay(b.spark, b.storage, wh, catalog),
                                                        QUERY, plan="commit")
            big = medians({k: v for k, v in runs.items() if k.endswith("big")},
                          rounds=args.rounds, warmups=args.warmups)
            tiny = medians({k: v for k, v in runs.items() if k.endswith("tiny")}, rounds=3)
            requests = {}
            for name in ("tiny", "big"):
                before = requests_logged(log)
                runs[f"s3_{name}"]()
                requests[name] = requests_logged(log) - before
    batches = runs["s3_big"].info.batches
    result = {
        "events": args.events, "keys": args.keys, "batches": batches, "rounds": args.rounds,
        "local_replay_s": round(big["local_big"], 2), "s3_replay_s": round(big["s3_big"], 2),
        "ratio": round(big["s3_big"] / big["local_big"], 2),
        "local_per_batch_s": round(tiny["local_tiny"] / (batches + 1), 3),
        "s3_per_batch_s": round(tiny["s3_tiny"] / (batches + 1), 3),
        "s3_requests_per_batch": round(requests["tiny"] / (batches + 1), 1),
        "s3_requests_per_batch_big": round(requests["big"] / (batches + 1), 1),
    }
    print(json.dumps(result, indent=1))
    record("object_store", command=command_line(),
           data_size={"events": args.events, "keys": args.keys, "batches": batches},
           medians={"local_replay_s": big["local_big"], "s3_replay_s": big["s3_big"],
                    "local_per_batch_s": tiny["local_tiny"] / (batches + 1),
                    "s3_per_batch_s": tiny["s3_tiny"] / (batches + 1)},
           ratio=result["ratio"], target="S3 (local S3-compatible server) / local <= 2",
           extra=result)
    print(f"tumbling replay of {args.events:,} events in {batches} batches: S3 "
          f"{result['s3_replay_s']} s, local {result['local_replay_s']} s, ratio "
          f"{result['ratio']} (aim <= 2); per batch: S3 {result['s3_per_batch_s']} s, local "
          f"{result['local_per_batch_s']} s; S3 requests per batch: "
          f"{result['s3_requests_per_batch']} (tiny), {result['s3_requests_per_batch_big']}")


if __name__ == "__main__":
    main()

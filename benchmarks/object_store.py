"""Benchmark: the tumbling replay on an S3 warehouse against a local one, in one process.

The replay is ``benchmarks.tumbling``'s (1M events, 20 batches by default). The S3 warehouse
is on moto's S3 server on 127.0.0.1 (the tests' server), which keeps its objects in memory: the
figure is the object-store protocol's overhead (requests, conditional commits, listing the Delta
log, reading Parquet through pyarrow's S3 client), not a network's.
Medians of alternating rounds (each side once in turn, after untimed warm-ups); also the
per-batch overhead of each (a 20-batch replay of a tiny recording), where the per-commit round
trips show, and the requests the S3 side sends (from moto's request log, over the tiny replay
and over one replay of the benchmark's events), by kind (method and object: log entry, input
file, ...) and, for the tiny replay, by phase (start, batches, end), with moto's time per
request of each method and the time the tiny replay's requests take at that rate. Run with
``python -m benchmarks.object_store [--events N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

from engine.catalog import load_catalog
from jobs.recordings.store import generate_recording
from jobs.runs.replay import Replay
from jobs.storage.filesystems import s3_client
from jobs.warehouse import Warehouse
from tests.support.s3_server import aws_env, logged_requests, s3_server

from .harness import ROOT, ReplayRuns, bench, medians
from .results import command_line, record

QUERY = "vitals_hr_1m"
#: The tiny recording's events per batch.
TINY_EVENTS_PER_BATCH = 10

#: The object a request's key names, by the first pattern it matches.
OBJECTS = [(re.compile(p), name) for p, name in (
    (r"/_delta_log/\d{20}\.json$", "log entry"),
    (r"/_delta_log/", "checkpoint"),
    (r"/run\.json$", "run.json"),
    (r"/\.lock$", "lock"),
    (r"/recordings/", "input file"),
    (r"/state/", "state file"),
    (r"/manifest/", "manifest file"),
    (r"/(output|late|quarantine)/", "output file"),
)]


def request_kind(method: str, target: str) -> str:
    """A request of moto's log as ``METHOD object`` (``LIST log``, ``LIST data``: listings)."""
    key, _, query = target.partition("?")
    if "list-type=2" in query:
        prefix = re.search(r"prefix=([^&]*)", query)
        return f"LIST {'log' if prefix and '_delta_log' in prefix.group(1) else 'data'}"
    return f"{method} " + next((name for pattern, name in OBJECTS if pattern.search(key)),
                               "other")


def kinds(requests: list[tuple[str, str, int]]) -> Counter:
    """How many requests of each :func:`request_kind`."""
    return Counter(request_kind(method, target) for method, target, _ in requests)


def phases(requests: list[tuple[str, str, int]]) -> dict[str, Counter]:
    """The requests of one replay by phase, as :func:`kinds`: ``start`` (before it reads its
    first input file: the run's lock, its tables' cleanup and marks), ``batches`` (up to the
    last commit of its manifest) and ``end`` (the cleanup, checkpoints, the lock's release)."""
    first = next(i for i, (method, target, _) in enumerate(requests)
                 if request_kind(method, target).endswith("input file"))
    last = max(i for i, (method, target, _) in enumerate(requests)
               if method == "PUT" and "/manifest/_delta_log/" in target)
    return {"start": kinds(requests[:first]), "batches": kinds(requests[first:last + 1]),
            "end": kinds(requests[last + 1:])}


def moto_ms(bucket: str, tries: int = 100) -> dict[str, float]:
    """moto's median milliseconds per request of each method (a client's round trip on
    127.0.0.1: a HEAD, a GET and a PUT of a 1 KiB object, a listing of 20 objects)."""
    client = s3_client()
    for i in range(20):
        client.put_object(Bucket=bucket, Key=f"probe/{i:02d}", Body=b"x" * 1024)
    calls = {"HEAD": lambda: client.head_object(Bucket=bucket, Key="probe/00"),
             "GET": lambda: client.get_object(Bucket=bucket, Key="probe/00")["Body"].read(),
             "PUT": lambda: client.put_object(Bucket=bucket, Key="probe/put", Body=b"x" * 1024),
             "LIST": lambda: client.list_objects_v2(Bucket=bucket, Prefix="probe/")}
    found = {}
    for method, call in calls.items():
        times = []
        for _ in range(tries):
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
        found[method] = round(statistics.median(times) * 1000, 2)
    return found


def request_seconds(counts: Counter, ms: dict[str, float]) -> float:
    """The seconds moto takes to answer ``counts`` requests of each kind, at ``ms`` per
    request of each method (a DELETE at a GET's)."""
    return sum(n * ms.get(kind.split()[0], ms["GET"]) for kind, n in counts.items()) / 1000


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
                                           ("tiny", args.batches * TINY_EVENTS_PER_BATCH, 10)):
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
                before = len(logged_requests(log))
                runs[f"s3_{name}"]()
                requests[name] = logged_requests(log, before)
            per_request_ms = moto_ms(bucket)
    batches = runs["s3_big"].info.batches
    tiny_phases = phases(requests["tiny"])
    by_kind = {name: kinds(found) for name, found in requests.items()}
    result = {
        "events": args.events, "keys": args.keys, "batches": batches, "rounds": args.rounds,
        "local_replay_s": round(big["local_big"], 2), "s3_replay_s": round(big["s3_big"], 2),
        "ratio": round(big["s3_big"] / big["local_big"], 2),
        "local_per_batch_s": round(tiny["local_tiny"] / (batches + 1), 3),
        "s3_per_batch_s": round(tiny["s3_tiny"] / (batches + 1), 3),
        "s3_requests_per_batch": round(len(requests["tiny"]) / (batches + 1), 1),
        "s3_requests_per_batch_big": round(len(requests["big"]) / (batches + 1), 1),
        "tiny_requests": len(requests["tiny"]),
        "tiny_requests_by_phase": {phase: dict(found.most_common())
                                   for phase, found in tiny_phases.items()},
        "big_requests_by_kind": dict(by_kind["big"].most_common()),
        "moto_ms_per_request": per_request_ms,
        "tiny_s3_replay_s": round(tiny["s3_tiny"], 3),
        "tiny_local_replay_s": round(tiny["local_tiny"], 3),
        "tiny_request_time_s": {phase: round(request_seconds(found, per_request_ms), 3)
                                for phase, found in tiny_phases.items()},
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
          f"{result['s3_requests_per_batch']} (tiny), {result['s3_requests_per_batch_big']} "
          f"(big); moto ms per request: {per_request_ms}")


if __name__ == "__main__":
    main()

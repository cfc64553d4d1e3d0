"""Benchmark: time per event and peak memory per process as the recording grows.

The tumbling replay (``vitals_hr_1m``) of vitals recordings of ``--sizes`` events (1M, 10M and
100M by default), each with the same keys (5,000), the same events per commit (200,000) and the
same batches per Spark job (5, all of the smallest recording's), so that a batch, a job and the
state they keep are the same size whatever the recording's: the whole
``reprise replay`` forced onto Spark with 2 buckets on ``local[2]``, and stepped in the driver,
once each per size (the largest recording takes about 1.3 GB of disk, generated and removed in
turn). Reports wall seconds, microseconds per event and the peak resident memory of the driver,
the JVM and the largest Python worker (``benchmarks.scale``'s sampling). Targets: time per
event at the largest size within 1.2x of the smallest's, and peak memory per process flat
(within 1.2x). ``python -m benchmarks.scale_series [--sizes N,N,...]``. Wall-clock timing is
right here (a benchmark), never in an operator.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

from engine.catalog import load_catalog
from jobs.storage import open_driver_storage

from .harness import ROOT, scratch_parent, vitals_warehouse
from .results import command_line, record
from .scale import QUERIES, recording_bytes, replay_once, summary

KEYS, PER_COMMIT, PER_JOB = 5_000, 200_000, 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000000,10000000,100000000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    catalog = load_catalog(ROOT / "schemas")
    storage = open_driver_storage("delta-rs")
    env = {**os.environ, "REPRISE_SPARK_MASTER": "local[2]",
           "REPRISE_BATCHES_PER_JOB": str(PER_JOB)}
    result: dict[str, dict] = {}
    for events in sizes:
        root = Path(scratch_parent()) / f"reprise-series-{os.getpid()}"
        try:
            warehouse = vitals_warehouse(storage, catalog, root, "w", events, KEYS,
                                  max(1, events // PER_COMMIT))
            size = recording_bytes(storage, warehouse)
            for engine in ("spark", "driver"):
                done = replay_once(warehouse, ROOT / "schemas", QUERIES["tumbling"], 2, engine,
                                   f"{engine}-{events}", env)
                case = summary([done], events, size)
                case["us_per_event"] = round(done["s"] / events * 1e6, 3)
                result[f"{engine}_{events}"] = case
                print(f"{engine} {events:,}: {case}", flush=True)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    low, high = sizes[0], sizes[-1]
    ratios = {}
    for engine in ("spark", "driver"):
        first, last = result[f"{engine}_{low}"], result[f"{engine}_{high}"]
        ratios[f"{engine}_per_event_{high}_over_{low}"] = round(
            last["us_per_event"] / first["us_per_event"], 3)
        for role in ("driver", "jvm", "worker"):
            if first[f"peak_{role}_mb"]:
                ratios[f"{engine}_peak_{role}_{high}_over_{low}"] = round(
                    last[f"peak_{role}_mb"] / first[f"peak_{role}_mb"], 3)
    print(json.dumps(ratios, indent=1))
    record("scale_series", command=command_line(),
           data_size={"sizes": sizes, "keys": KEYS, "events_per_commit": PER_COMMIT,
                      "batches_per_job": PER_JOB},
           medians={f"{name}_s": case["s"] for name, case in result.items()} | ratios,
           ratio=ratios[f"spark_per_event_{high}_over_{low}"],
           target="time per event at the largest size within 1.2x of the smallest's; peak "
                  "memory per process within 1.2x",
           extra=result)


if __name__ == "__main__":
    main()

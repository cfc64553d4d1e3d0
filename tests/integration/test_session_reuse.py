"""One Spark session per process: ``reprise follow``'s continuations and a process's Dagster
materialisations start Spark once (counted by :func:`jobs.runtime.spark_session.session_starts`
in a fresh process, forced onto Spark)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_PROCESS = """
import sys
from pathlib import Path
import dagster as dg
from engine.catalog import load_catalog
from jobs.cli.command_context import Context
from jobs.recordings.store import generate_recording
from jobs.runs.continuation import continue_query
from jobs.runtime.spark_session import session_starts
from jobs.storage import open_driver_storage
from jobs.warehouse import Warehouse
from orchestration.definitions import build_definitions

root, schemas = Path(sys.argv[1]), Path(sys.argv[2])
storage, warehouse = open_driver_storage("delta-rs"), Warehouse(root)
catalog = load_catalog(schemas)
generate_recording(storage, warehouse, catalog, "vitals", keys=5, events=600, seed=1, commits=2)
seen = [session_starts()]
# what `reprise follow` does: one command context, a continuation each time the recording grows
runner = Context(root, schemas, None).replay()
for extra in range(2):
    continue_query(runner, "vitals_hr_1m", log=lambda line: None)
    seen.append(session_starts())
    more = storage.read_arrow(warehouse.recording("vitals")).slice(0, 50)
    storage.write(more, warehouse.recording("vitals"), mode="append")
job = build_definitions(str(schemas)).resolve_implicit_global_asset_job_def()
for name in ("vitals_hr_1m", "vitals_tachy_count"):  # two Dagster runs in this process
    done = job.execute_in_process(asset_selection=[dg.AssetKey(["replays", name])],
                                  instance=dg.DagsterInstance.ephemeral())
    assert done.success
    seen.append(session_starts())
print("STARTS", *seen)
"""


def test_follow_and_dagster_materialisations_start_spark_once_per_process(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REPRISE_ENGINE": "spark",
           "REPRISE_WAREHOUSE": str(tmp_path / "warehouse"),
           "REPRISE_CATALOG": str(ROOT / "schemas")}
    done = subprocess.run([sys.executable, "-c", _PROCESS, str(tmp_path / "warehouse"),
                           str(ROOT / "schemas")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    starts = next(line for line in done.stdout.splitlines() if line.startswith("STARTS "))
    assert starts.split()[1:] == ["0", "1", "1", "1", "1"]

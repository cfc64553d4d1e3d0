"""The worker daemon's preload (jobs.runtime.worker_daemon): what it imports, that it can fork, and
that
the collector of a forked worker leaves the preloaded objects alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from jobs.runtime.worker_daemon import PRELOAD, SINGLE_THREADED, without_archives

ROOT = Path(__file__).resolve().parents[3]
PROBE = """
import gc, json, os, sys
from jobs.runtime.worker_daemon import preload
missing = preload()
threads = [open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")]
walked = {id(o) for o in gc.get_objects()}  # what a full collection walks
print(json.dumps({"missing": missing, "threads": threads,
                  "loaded": [m for m in sys.argv[1:] if m in sys.modules],
                  "walked": [m for m in sys.argv[1:] if id(vars(sys.modules[m])) in walked]}))
"""


def _preloaded(env: dict[str, str]) -> dict:
    """What :data:`PROBE` reports of a fresh process that ran the preload."""
    done = subprocess.run([sys.executable, "-c", PROBE, *PRELOAD],
                          env={**env, "PYTHONPATH": str(ROOT)}, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_preload_imports_every_module_and_leaves_one_thread_to_fork_from():
    """Forking a process with other threads leaves their locks held in the child: after the
    preload the daemon must still have exactly one thread (numpy's OpenBLAS pool and the
    jemalloc purge threads of pyarrow and deltalake would otherwise be running)."""
    report = _preloaded({k: v for k, v in os.environ.items() if k not in SINGLE_THREADED})
    assert report["missing"] == []
    assert report["loaded"] == list(PRELOAD)
    assert report["threads"] == ["python"]


def test_preloaded_objects_are_left_out_of_the_workers_collections():
    """The preload ends with ``gc.freeze()``: a full collection in a forked worker does not walk
    the preloaded modules' objects (about 126,000, 60 ms a collection)."""
    assert _preloaded(dict(os.environ))["walked"] == []


def test_without_archives_keeps_directories(tmp_path):
    archive = tmp_path / "pyspark.zip"
    archive.write_bytes(b"")
    assert without_archives([str(tmp_path), str(archive), "/nowhere.jar"]) == [
        str(tmp_path), "/nowhere.jar"]

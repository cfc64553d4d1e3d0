"""Every family replays and validates on a Spark standalone cluster (a master and two 1-core
workers on 127.0.0.1, started from the environment's pyspark), a replay survives a worker
SIGKILLed in the middle of it, and a replay with the warehouse on an S3-compatible store (the
tests' moto server) equals the local-mode run of the same query, although the executors run in
directories of their own, without the driver's AWS settings in their environment.

The drivers are ``reprise`` commands run as the README's "A Spark cluster" section says; the
workers have no ``PYTHONPATH``, so the executors run the code the driver ships. Slow (several
Spark applications): ``make test-slow`` or ``.venv/bin/python -m pytest -m slow``.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from standalone import StandaloneCluster, cluster_env

from jobs.runtime.code_shipping import CODE_ZIP
from jobs.storage.filesystems import s3_client
from jobs.storage.locations import filesystem, names
from jobs.storage.orphans import referenced_files

pytestmark = pytest.mark.slow

REPRISE = [sys.executable, "-m", "jobs.cli.app"]
#: One query of each family, and the recordings they read.
QUERIES = {"window": "vitals_hr_1m", "qre": "vitals_tachy_count", "spj": "ads_campaign_counts"}
TIMEOUT_S = 900


def reprise(env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run([*REPRISE, *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode == 0, f"reprise {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def run_json(warehouse: Path, run_id: str) -> dict:
    return json.loads((warehouse / "runs" / run_id / "run.json").read_text())


def unreferenced(table: Path) -> set[Path]:
    data = {p.resolve() for p in (table / "data").rglob("*.parquet")}
    return data - {Path(p) for p in referenced_files(table) or set()}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with StandaloneCluster(tmp_path_factory.mktemp("cluster")) as started:
        yield started
    assert not started.stragglers()


@pytest.fixture(scope="module")
def driver(cluster, tmp_path_factory):
    """(environment of a reprise driver on the cluster, its working directory, warehouse)."""
    cwd = tmp_path_factory.mktemp("driver")
    warehouse = cwd / "warehouse"
    env = cluster_env(cluster.url, warehouse, PYTHONPATH=str(Path(__file__).parents[2]))
    reprise(env, cwd, "generate", "vitals", "--keys", "40", "--events", "6000", "--commits", "4")
    reprise(env, cwd, "generate", "ads", "--keys", "100", "--events", "6000", "--commits", "3")
    return env, cwd, warehouse


@pytest.mark.parametrize("family", sorted(QUERIES))
def test_each_family_replays_and_validates_on_the_cluster(cluster, driver, family):
    env, cwd, warehouse = driver
    run_id = f"cluster-{family}"
    reprise(env, cwd, "replay", QUERIES[family], "--run-id", run_id)
    assert "output equals the reference" in reprise(env, cwd, "validate", run_id)
    info = run_json(warehouse, run_id)
    assert info["buckets"] == 2  # the executors' cores, not Spark's 200 shuffle partitions
    if family == "spj":  # the merged input is written as one file per bucket at most
        files = list((warehouse / "runs" / run_id / "input").rglob("*.parquet"))
        assert 1 <= len(files) <= 2
    # the executors fetched the shipped code (they have no PYTHONPATH of their own)
    assert list((cluster.root / "work").glob(f"app-*/*/{CODE_ZIP}"))


def test_executors_import_the_project_from_the_shipped_zip(cluster, driver):
    env, cwd, _ = driver
    code = ("from jobs.runtime.spark_session import get_spark\n"
            "sc = get_spark().sparkContext\n"
            "print(sc.parallelize(range(2), 2).map(\n"
            "    lambda _: __import__('jobs.execution.keyed_steps', fromlist=['k'])\n"
            "    .__file__).collect())\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True,
                         text=True, timeout=TIMEOUT_S, check=True).stdout
    paths = ast.literal_eval(out.strip().splitlines()[-1])  # a printed list of two paths
    shipped = f"/{CODE_ZIP}/jobs/execution/keyed_steps.py"
    assert len(paths) == 2 and all(shipped in p for p in paths), paths


def test_a_shared_replay_runs_its_parts_side_by_side_and_each_query_validates(cluster, driver):
    """Issue 16 on the cluster: several queries of one recording in one shared run (a Spark job
    per part of the queries, the jobs side by side on the executors), each run validating."""
    env, cwd, warehouse = driver
    names = ["vitals_hr_1m", "vitals_hr_10m_sliding", "vitals_low_spo2", "vitals_last_episode"]
    out = reprise(env, cwd, "replay", *names)
    assert "shared run of" in out
    run_ids = re.findall(r"^run (\S+): vitals", out, flags=re.MULTILINE)
    assert len(run_ids) == len(names)
    for run_id in run_ids:
        assert "output equals the reference" in reprise(env, cwd, "validate", run_id)
        assert run_json(warehouse, run_id)["buckets"] == 2


def test_a_replay_survives_a_worker_killed_in_the_middle(cluster, driver):
    env, cwd, warehouse = driver
    run_id = "cluster-killed-worker"
    manifest_log = warehouse / "runs" / run_id / "manifest" / "_delta_log"
    replay = subprocess.Popen(
        [*REPRISE, "replay", QUERIES["window"], "--plan", "rows:300", "--run-id", run_id],
        env={**env, "REPRISE_BATCHES_PER_JOB": "1"}, cwd=cwd, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not list(manifest_log.glob("*.json")) and replay.poll() is None:
            assert time.monotonic() < deadline, "no batch committed"
            time.sleep(0.2)
        assert replay.poll() is None, "the replay ended before a worker could be killed"
        cluster.kill("worker1")  # its executor and Python workers die with it
        out, _ = replay.communicate(timeout=TIMEOUT_S)
    finally:
        if replay.poll() is None:
            replay.kill()
            replay.wait()
    assert replay.returncode == 0, out
    assert len(run_json(warehouse, run_id)["cuts"]) - 1 == 20  # 6,000 events, rows:300
    assert "output equals the reference" in reprise(env, cwd, "validate", run_id)
    for table in ("output", "late", "quarantine", "state", "manifest"):
        assert not unreferenced(warehouse / "runs" / run_id / table)


@pytest.fixture(scope="module")
def s3_driver(cluster, s3_endpoint, tmp_path_factory):
    """(environment of a reprise driver on the cluster whose warehouse is on the tests' S3
    server, its working directory, the warehouse URI), the vitals recording generated."""
    bucket = f"cluster-{uuid.uuid4().hex[:12]}"
    s3_client().create_bucket(Bucket=bucket)
    cwd = tmp_path_factory.mktemp("s3-driver")
    warehouse = f"s3://{bucket}/wh"
    env = cluster_env(cluster.url, warehouse, PYTHONPATH=str(Path(__file__).parents[2]))
    reprise(env, cwd, "generate", "vitals", "--keys", "40", "--events", "6000", "--commits", "4")
    return env, cwd, warehouse


def test_a_replay_on_the_cluster_with_an_s3_warehouse_equals_the_local_mode_run(cluster,
                                                                               s3_driver):
    """The executors run in the workers' directories (not the driver's) and get the AWS settings
    from the driver only: a file an executor wrote to a local path would not reach the driver.
    Both exchanges on the cluster equal the local-mode run row for row and the reference."""
    env, cwd, warehouse = s3_driver
    for exchange in ("direct", "spark"):
        reprise({**env, "REPRISE_EXCHANGE": exchange}, cwd, "replay", QUERIES["window"],
                "--run-id", f"s3-cluster-{exchange}", "--engine", "spark")
    local = {**env, "REPRISE_SPARK_MASTER": "local[2]"}
    reprise(local, cwd, "replay", QUERIES["window"], "--run-id", "s3-local", "--engine", "spark")
    for exchange in ("direct", "spark"):
        run_id = f"s3-cluster-{exchange}"
        fs, inner = filesystem(f"{warehouse}/runs/{run_id}/run.json")
        with fs.open_input_stream(inner) as stream:
            assert json.loads(stream.read())["buckets"] == 2  # the executors stepped them
        assert "output equals the reference" in reprise(env, cwd, "validate", run_id)
        assert "equal" in reprise(env, cwd, "diff", run_id, "s3-local")  # (exit 0: equal)
    # nothing written beside the store: no local directory named after the URI anywhere
    work = cluster.root / "work"
    assert not [p for p in [*cwd.rglob("*"), *work.rglob("*")] if p.name.startswith("s3:")]
    assert names(f"{warehouse}/runs") >= {"s3-local", "s3-cluster-direct", "s3-cluster-spark"}

"""A warehouse on an S3-compatible store (moto's server, tests/support/s3_server.py) through the
``reprise`` command: recordings land in the bucket (nothing local), bad warehouse settings are
one ``error:`` line before Spark starts, and the secret key is never printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from s3_server import SECRET_KEY, aws_env, s3_server

from jobs.storage.filesystems import s3_client

ROOT = Path(__file__).resolve().parents[2]


def reprise(cwd: Path, warehouse: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    """``reprise ARGS`` in ``cwd`` with ``REPRISE_WAREHOUSE=warehouse`` (and ``env``)."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "jobs.cli.app", *args], cwd=cwd,
                          env={**os.environ, "PYTHONPATH": path, "REPRISE_CATALOG": str(
                              ROOT / "schemas"), "REPRISE_WAREHOUSE": warehouse, **env},
                          capture_output=True, text=True, check=False, timeout=300)


def one_error(done: subprocess.CompletedProcess, *parts: str) -> None:
    """``done`` failed with one ``error:`` line holding ``parts``, without the secret."""
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: warehouse "), done.stderr
    assert all(part in lines[0] for part in parts), lines[0]
    assert SECRET_KEY not in done.stdout + done.stderr


@pytest.mark.parametrize(("uri", "problem"), [
    ("gs://bucket/wh", "scheme gs:// is not supported"),
    ("s3:///wh", "no bucket"),
    ("s3a://bucket/wh", "write s3://"),
])
def test_an_unusable_warehouse_uri_is_one_error_line_and_nothing_local(tmp_path, uri, problem):
    one_error(reprise(tmp_path, uri, "generate", "vitals", "--keys", "3", "--events", "50"),
              uri, problem)
    assert list(tmp_path.iterdir()) == []  # (it used to write a local directory named 's3:')


def test_a_missing_bucket_and_an_unreachable_endpoint_are_one_error_line(tmp_path, s3_warehouse):
    missing = s3_warehouse.root.replace("s3://", "s3://no-such-bucket-").split("/wh")[0] + "/wh"
    one_error(reprise(tmp_path, missing, "generate", "vitals", "--keys", "3", "--events", "50"),
              missing, "does not exist")
    one_error(reprise(tmp_path, s3_warehouse.root, "runs",
                      AWS_ENDPOINT_URL="http://127.0.0.1:9"),
              s3_warehouse.root, "cannot reach http://127.0.0.1:9 (AWS_ENDPOINT_URL)")
    assert list(tmp_path.iterdir()) == []


def test_wrong_credentials_are_one_error_line_without_the_secret(tmp_path):
    # (a server that checks credentials: moto's IAM authentication from its first request)
    with s3_server({**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "0"}) as endpoint:
        done = reprise(tmp_path, "s3://reprise-auth/wh", "runs", **aws_env(endpoint))
    one_error(done, "s3://reprise-auth/wh", "denied", "AWS_SECRET_ACCESS_KEY")


def test_generate_replay_validate_and_runs_keep_everything_in_the_bucket(tmp_path, s3_warehouse):
    wh = s3_warehouse.root
    done = reprise(tmp_path, wh, "generate", "vitals", "--keys", "5", "--events", "300",
                   "--commits", "2")
    assert done.returncode == 0, done.stderr
    assert f"version 1 at {wh}/recordings/vitals" in done.stdout
    replayed = reprise(tmp_path, wh, "replay", "vitals_hr_1m", "--run-id", "r1",
                       "--engine", "driver")
    assert replayed.returncode == 0, replayed.stderr
    checked = reprise(tmp_path, wh, "validate", "r1")
    assert checked.returncode == 0 and "output equals the reference" in checked.stdout, (
        checked.stdout + checked.stderr)
    listed = reprise(tmp_path, wh, "runs")
    assert listed.returncode == 0 and f"runs in {wh}" in listed.stdout, listed.stderr
    assert "r1" in listed.stdout and "complete" in listed.stdout
    bucket, prefix = wh[len("s3://"):].split("/", 1)
    keys = [o["Key"] for o in s3_client().list_objects_v2(Bucket=bucket)["Contents"]]
    assert f"{prefix}/recordings/vitals/_delta_log/00000000000000000001.json" in keys
    assert f"{prefix}/runs/r1/run.json" in keys
    assert any(k.startswith(f"{prefix}/runs/r1/output/_delta_log/") for k in keys)
    assert f"{prefix}/runs/r1/.lock" not in keys  # (released)
    assert list(tmp_path.iterdir()) == []  # nothing written locally
    for out in (done, replayed, checked, listed):
        assert SECRET_KEY not in out.stdout + out.stderr


def test_an_spj_replay_and_a_pipeline_on_s3_equal_their_references(spark, storage, catalog,
                                                                   s3_warehouse):
    # (the SPJ merged input is a DataFrame the executors write to the bucket with pyarrow; the
    # pipeline stage reads its upstream's output from it)
    from jobs.recordings.store import generate_recording
    from jobs.runs.replay import Replay
    from jobs.runs.validate import validate_run

    for kind in ("ads", "vitals"):
        generate_recording(storage, s3_warehouse, catalog, kind, keys=5, events=600, seed=2,
                           commits=2)
    replay = Replay(spark, storage, s3_warehouse, catalog, engine="spark")
    for query in ("ads_campaign_counts", "vitals_tachy_alert"):
        info = replay.prepare(query)
        replay.run(info)
        report = validate_run(replay, catalog, info.run_id)
        assert report.ok, (query, report.diff, report.late_mismatch)
    merged = replay.warehouse.run_table(replay.prepare("ads_campaign_counts").run_id, "input")
    assert merged.startswith(s3_warehouse.root) and storage.exists(merged)

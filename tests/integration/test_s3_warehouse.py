"""A warehouse on an S3-compatible store (moto's server, tests/support/s3_server.py) through the
``reprise`` command: recordings land in the bucket (nothing local), bad warehouse settings are
one ``error:`` line before Spark starts, and the secret key is never printed."""

from __future__ import annotations

import json
import os
import shutil
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


def test_record_plan_analyze_follow_continue_and_gc_on_s3(tmp_path, s3_warehouse):
    # (the commands a user runs after `generate` and `replay`, each on the bucket, as a user would)
    from deltalake import DeltaTable

    wh = s3_warehouse.root
    recording = f"{wh}/recordings/vitals"

    def ok(*args: str) -> str:
        done = reprise(tmp_path, wh, *args)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        assert SECRET_KEY not in done.stdout + done.stderr
        return done.stdout

    def rows_added(version: int) -> int:
        table = DeltaTable(recording)
        assert table.version() == version
        before = DeltaTable(recording, version=version - 1).to_pyarrow_table().num_rows
        return table.to_pyarrow_table().num_rows - before

    bucket, prefix = wh[len("s3://"):].split("/", 1)

    def segments(run_id: str) -> int:
        body = s3_client().get_object(Bucket=bucket, Key=f"{prefix}/runs/{run_id}/run.json")
        return len(json.loads(body["Body"].read())["segments"])

    ok("generate", "vitals", "--keys", "5", "--events", "300", "--commits", "2")
    planned = ok("plan", "vitals_hr_1m", "vitals_tachy_count")
    assert "cluster 0: vitals_hr_1m, vitals_tachy_count" in planned
    assert "rows read" in planned and "shared vs" in planned
    analyzed = ok("analyze", "--query", "ads_campaign_counts")
    assert analyzed.startswith("bounded") and '"a.ad_id"' in analyzed
    assert '"c.campaign_id"' in analyzed
    ok("replay", "vitals_hr_1m", "--run-id", "r1", "--engine", "driver")

    csv = tmp_path.parent / f"{tmp_path.name}-rows.csv"
    csv.write_text("patient_id,ts,heart_rate,spo2\np1,2024-01-01T00:00:00,80,97\n"
                   "p2,2024-01-01T00:00:01,90,95\np1,2024-01-01T00:00:05,101,96\n")
    assert "3 rows, 3 fit, 0 quarantined" in ok("record", "vitals", str(csv))
    assert rows_added(2) == 3
    followed = ok("follow", "vitals_hr_1m", "--max-segments", "1", "--every", "1s")
    assert "r1:" in followed and segments("r1") == 2, followed

    jsonl = tmp_path.parent / f"{tmp_path.name}-rows.jsonl"
    jsonl.write_text('{"patient_id": "p3", "ts": "2024-01-01T00:10:00", "heart_rate": 70, '
                     '"spo2": 99}\n{"patient_id": "p3", "ts": "2024-01-01T00:10:09", '
                     '"heart_rate": 72, "spo2": 98}\n')
    ok("record", "vitals", str(jsonl))
    assert rows_added(3) == 2
    ok("replay", "vitals_hr_1m", "--continue", "--engine", "driver")
    assert segments("r1") == 3

    ok("replay", "vitals_hr_1m", "--run-id", "r2", "--engine", "driver")
    assert "removed r1" in ok("gc")
    listed = ok("runs").splitlines()
    assert any(" r2 " in line for line in listed) and not any(" r1 " in line for line in listed)
    left = s3_client().list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/runs/")["Contents"]
    assert not [o for o in left if o["Key"].startswith(f"{prefix}/runs/r1/")]
    assert any(o["Key"].startswith(f"{prefix}/runs/r2/") for o in left)
    csv.unlink()
    jsonl.unlink()


def test_a_spark_replay_on_s3_leaves_the_secret_in_no_log_and_no_object(tmp_path, s3_warehouse):
    # (the executors' settings as on a cluster, spark.executorEnv.AWS_*: Spark's event log holds
    # its conf, redacted; the JVM's own log, the output, run.json and the Delta log entries in the
    # bucket never hold the secret)
    from jobs.runtime.jvm_stderr import jvm_log_path

    wh = s3_warehouse.root
    events = tmp_path.parent / f"{tmp_path.name}-events"
    events.mkdir()
    jvm_log = jvm_log_path()
    jvm_start = jvm_log.stat().st_size if jvm_log.exists() else 0
    conf = (f"spark.eventLog.enabled=true;spark.eventLog.compress=false;"
            f"spark.eventLog.dir=file://{events};"
            f"spark.executorEnv.AWS_SECRET_ACCESS_KEY={SECRET_KEY}")
    outputs = [reprise(tmp_path, wh, "generate", "vitals", "--keys", "5", "--events", "300"),
               reprise(tmp_path, wh, "replay", "vitals_hr_1m", "--run-id", "r1", "--engine",
                       "spark", REPRISE_SPARK_CONF=conf, REPRISE_VERBOSE="1")]
    assert all(done.returncode == 0 for done in outputs), outputs[-1].stderr
    logs = {"stdout and stderr": "".join(d.stdout + d.stderr for d in outputs)}
    if jvm_log.exists():
        with jvm_log.open(errors="replace") as f:
            f.seek(jvm_start)
            logs["jvm log"] = f.read()
    logs["event log"] = "".join(path.read_text(errors="replace")
                                for path in events.rglob("*") if path.is_file())
    assert "spark.executorEnv.AWS_SECRET_ACCESS_KEY" in logs["event log"]  # (there, redacted)
    bucket, prefix = wh[len("s3://"):].split("/", 1)
    client = s3_client()
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]]
    assert f"{prefix}/runs/r1/run.json" in keys
    for key in keys:
        logs[key] = client.get_object(Bucket=bucket, Key=key)["Body"].read().decode(
            errors="replace")
    assert not [where for where, text in logs.items() if SECRET_KEY in text]
    shutil.rmtree(events)

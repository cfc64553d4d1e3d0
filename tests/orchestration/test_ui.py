"""The Dagster UI in a real browser: asset graph shown, a run launched over GraphQL succeeds."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from jobs.recordings.store import generate_recording

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
DAGSTER_YAML = """\
run_coordinator:
  module: dagster.core.run_coordinator
  class: DefaultRunCoordinator
telemetry:
  enabled: false
"""
LAUNCH = """
mutation($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on InvalidSubsetError { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}"""
STATUS = """
query($runId: ID!) { runOrError(runId: $runId) { ... on Run { status } } }"""
LOCATIONS = """
{ workspaceOrError { ... on Workspace { locationEntries { name } } } }"""
CHECKS = """
query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { ... on AssetNode {
  assetChecksOrError { ... on AssetChecks { checks {
    name executionForLatestMaterialization { status } } } } } } }"""
REPLAY_KEY = {"path": ["replays", "vitals_hr_1m"]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(port: int, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())["data"]


@contextmanager
def running_webserver(storage, catalog, warehouse, tmp_path, env: dict[str, str] | None = None
                      ) -> Iterator[int]:
    """dagster-webserver on 127.0.0.1 (over a vitals recording generated in ``warehouse``) in its
    own process group, killed after the block; yields its port."""
    generate_recording(storage, warehouse, catalog, "vitals", keys=5, events=2_000, seed=2,
                       commits=2)
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(DAGSTER_YAML)
    port = free_port()
    env = {**os.environ, "DAGSTER_HOME": str(home), "REPRISE_WAREHOUSE": str(warehouse.root),
           **(env or {})}
    log = (tmp_path / "webserver.log").open("w")
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "dagster-webserver"), "-w", "workspace.yaml",
         "-h", "127.0.0.1", "-p", str(port)], cwd=ROOT, env=env, stdout=log,
        stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=5)
                break
            except OSError:
                assert proc.poll() is None, (tmp_path / "webserver.log").read_text()
                assert time.monotonic() < deadline, "webserver did not start"
                time.sleep(0.5)
        yield port
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # its children ignore SIGTERM (docs/guide/dagster.md)
        proc.wait()
        log.close()


@pytest.fixture
def webserver(storage, catalog, warehouse, tmp_path):
    """:func:`running_webserver` on the test's local warehouse."""
    with running_webserver(storage, catalog, warehouse, tmp_path) as port:
        yield port


def replay_checks(port: int) -> dict[str, str | None]:
    """The replay asset's checks: name -> status of its execution for the latest materialisation."""
    node = graphql(port, CHECKS, {"key": REPLAY_KEY})["assetNodeOrError"]
    return {c["name"]: (c["executionForLatestMaterialization"] or {}).get("status")
            for c in node["assetChecksOrError"]["checks"]}


def launch_and_wait(port: int, checks: list[str]) -> str:
    """Launch the vitals replay with the given checks over GraphQL; returns the final run status."""
    (location,) = [e["name"] for e in graphql(port, LOCATIONS)["workspaceOrError"]
                   ["locationEntries"]]
    params = {"selector": {
        "repositoryLocationName": location, "repositoryName": "__repository__",
        "jobName": "replay_all",
        "assetSelection": [{"path": ["recordings", "vitals"]},
                           REPLAY_KEY],
        "assetCheckSelection": [{"assetKey": REPLAY_KEY, "name": check} for check in checks]},
        "runConfigData": {}}
    launched = graphql(port, LAUNCH, {"params": params})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]
    deadline, status = time.monotonic() + 300, None
    while time.monotonic() < deadline:
        status = graphql(port, STATUS, {"runId": run_id})["runOrError"]["status"]
        if status in ("SUCCESS", "FAILURE", "CANCELED"):
            break
        time.sleep(1)
    return status


def dismiss_welcome(page) -> None:
    page.wait_for_timeout(1500)
    skip = page.get_by_role("button", name="Skip")
    if skip.count():
        skip.click()


def test_asset_graph_in_browser_and_run_launched_over_graphql(webserver, tmp_path):
    port = webserver
    checks = sorted(replay_checks(port))
    assert {"matches_reference", "quality", "manifest_reconciles"} <= set(checks)
    assert launch_and_wait(port, checks) == "SUCCESS"
    assert replay_checks(port) == dict.fromkeys(checks, "SUCCEEDED")
    shot = tmp_path / "asset-graph.png"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(f"http://127.0.0.1:{port}/asset-groups", wait_until="networkidle")
        dismiss_welcome(page)
        for group in ("recordings", "window"):  # the global graph shows the catalog's groups
            page.get_by_text(group, exact=True).first.wait_for(timeout=60_000)
        page.goto(f"http://127.0.0.1:{port}/assets/replays/vitals_hr_1m?view=lineage",
                  wait_until="networkidle")
        dismiss_welcome(page)
        for name in ("vitals", "vitals_hr_1m"):  # the recording asset and its replay asset
            page.get_by_text(name, exact=True).first.wait_for(timeout=60_000)
        page.get_by_text(f"{len(checks)} / {len(checks)} Passed").first.wait_for(timeout=60_000)
        page.screenshot(path=str(shot))
        browser.close()
    assert shot.stat().st_size > 10_000
    if os.environ.get("REPRISE_SCREENSHOT_DIR"):
        shutil.copy(shot, Path(os.environ["REPRISE_SCREENSHOT_DIR"]) / "ui-asset-graph.png")


def test_a_run_launched_over_graphql_on_an_s3_warehouse_logs_no_secret(storage, catalog,
                                                                        s3_warehouse, tmp_path):
    # (`make ui` on a warehouse in a bucket: the webserver's code location and the run it
    # launches read REPRISE_WAREHOUSE=s3://... and the AWS settings from the environment)
    from dagster import DagsterInstance
    from s3_server import SECRET_KEY

    from jobs.storage.filesystems import s3_client

    with running_webserver(storage, catalog, s3_warehouse, tmp_path) as port:
        checks = sorted(replay_checks(port))
        assert launch_and_wait(port, checks) == "SUCCESS"
        assert replay_checks(port) == dict.fromkeys(checks, "SUCCEEDED")
    logs = {"webserver log": (tmp_path / "webserver.log").read_text(errors="replace")}
    home = tmp_path / "dagster_home"
    with DagsterInstance.from_config(str(home)) as instance:  # the event log, through its API
        (run,) = instance.get_runs()
        logs["run"] = repr(run)
        logs["event log"] = "\n".join(repr(entry) for entry in instance.all_logs(run.run_id))
    assert "ASSET_MATERIALIZATION" in logs["event log"]
    for path in home.rglob("*"):  # its files as they are: databases, compute logs
        if path.is_file():
            logs[str(path)] = path.read_bytes().decode(errors="replace")
    bucket, prefix = s3_warehouse.root[len("s3://"):].split("/", 1)
    client = s3_client()
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]]
    assert any(key.startswith(f"{prefix}/runs/") and key.endswith("/run.json") for key in keys)
    for key in keys:  # run.json, the Delta log entries' commit metadata, the data
        logs[key] = client.get_object(Bucket=bucket, Key=key)["Body"].read().decode(
            errors="replace")
    assert not [where for where, text in logs.items() if SECRET_KEY in text]

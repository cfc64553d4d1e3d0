"""The crash campaign on an S3 warehouse (moto's server): a replay SIGKILLed at commit
boundaries and at random instants, ten times, each killed run resumed by the next replay (once
the killed holder's lease on the run's lock object has run out): each equals the uninterrupted
run row for row. Long: marked ``slow`` (``make test-slow``)."""

from __future__ import annotations

import json
import random
import signal
import time

import pytest
from continue_kills import COMMITS, reprise

from jobs.recordings.store import generate_recording
from jobs.runs.replay import Replay

QUERY, PLAN = "vitals_hr_1m", "rows:2000"


def rows(replay: Replay, run_id: str, table: str) -> list[tuple]:
    frame = replay.storage.read_arrow(replay.warehouse.run_table(run_id, table)).to_pandas()
    return sorted(tuple(r) for r in frame.astype(object).itertuples(index=False))


@pytest.mark.slow
def test_ten_sigkills_of_a_replay_on_s3_each_resumed_equal_the_uninterrupted_run(
        spark, storage, catalog, s3_warehouse, monkeypatch):
    monkeypatch.setenv("REPRISE_LOCK_LEASE", "1")
    generate_recording(storage, s3_warehouse, catalog, "vitals", keys=20, events=20_000, seed=5,
                       commits=3)
    wh = s3_warehouse.root
    rc, out = reprise(wh, "replay", QUERY, "--plan", PLAN, "--run-id", "straight")
    assert rc == 0 and COMMITS in out, out
    took = json.loads(out.split(COMMITS)[1].splitlines()[0])
    rng = random.Random(34)
    boundaries = sorted(rng.sample(range(1, took["commits"]), 6))
    kills = [f"c{k}" for k in boundaries] + [
        f"w{rng.uniform(0, took['span'] * 1000):.0f}" for _ in range(4)]
    replay = Replay(spark, storage, s3_warehouse, catalog)
    expected = {t: rows(replay, "straight", t) for t in ("output", "late", "quarantine")}
    for i, kill in enumerate(kills):
        run_id = f"k{i}"
        rc, out = reprise(wh, "replay", QUERY, "--plan", PLAN, "--run-id", run_id, kill=kill)
        assert rc in (-signal.SIGKILL, 0), (kill, out)  # (a late instant: the run finished)
        time.sleep(1.5)  # the killed holder's lease runs out
        replay.run(replay.prepare(QUERY, plan=PLAN, run_id=run_id))
        for table, want in expected.items():
            assert rows(replay, run_id, table) == want, (kill, table)
        manifest = replay.manifest(run_id).to_pandas()
        assert manifest["batch"].tolist() == sorted(set(manifest["batch"])), kill

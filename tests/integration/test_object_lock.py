"""The run lock on an object store (moto's S3 server): a lock object made with a conditional
put; a second holder is refused at once naming the first; a holder that died blocks the run only
until its lease runs out; the lease is renewed while the holder lives."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from jobs.runs.object_lock import ObjectLockBusy, holder_of, object_lock
from jobs.runs.run_lock import RunBusy, is_locked, run_lock


def _hold_then_die(lock_uri: str, env: dict, ready) -> None:
    """(in a child process) take the lock and die without releasing it."""
    import os

    os.environ.update(env)
    from jobs.storage.object_paths import ObjectPath

    with object_lock(ObjectPath(lock_uri), lease=2.0):
        ready.set()
        os._exit(9)  # (like SIGKILL: no release)


def test_two_holders_of_one_run_the_second_is_refused_naming_the_first(s3_warehouse):
    run_dir = s3_warehouse.run_dir("r1")
    with run_lock(run_dir, "r1"):
        assert is_locked(run_dir)
        with pytest.raises(RunBusy, match=r"run 'r1' is being replayed by another process "
                                          r"\(.* pid \d+\)"), run_lock(run_dir, "r1"):
            pass
    assert not is_locked(run_dir) and not (run_dir / ".lock").exists()
    with run_lock(run_dir, "r1"):  # released: free again
        pass


def test_a_dead_holder_blocks_only_until_its_lease_runs_out(s3_warehouse):
    import os

    lock = s3_warehouse.run_dir("r2") / ".lock"
    env = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    ready = multiprocessing.get_context("spawn").Event()
    child = multiprocessing.get_context("spawn").Process(
        target=_hold_then_die, args=(lock.uri, env, ready))
    child.start()
    child.join(60)
    assert ready.is_set() and child.exitcode == 9
    with pytest.raises(ObjectLockBusy), object_lock(lock, lease=2.0):
        pass
    time.sleep(2.5)
    assert holder_of(lock, lease=2.0) is None
    with object_lock(lock, lease=2.0):  # taken over
        assert holder_of(lock, lease=2.0) is not None


def test_a_live_holder_renews_its_lease(s3_warehouse):
    lock = s3_warehouse.run_dir("r3") / ".lock"
    with object_lock(lock, lease=1.2):
        time.sleep(2.0)  # longer than the lease: renewed every 0.3 s
        with pytest.raises(ObjectLockBusy), object_lock(lock, lease=1.2):
            pass

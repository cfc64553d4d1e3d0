"""One replay at a time per run: an exclusive lock on ``runs/<run_id>/.lock`` (flock), or on an
object store a lock object with a lease (:mod:`jobs.runs.object_lock`)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager

from engine.errors import RepriseError
from jobs.runs.object_lock import ObjectLockBusy, holder_of, object_lock
from jobs.settings import load_settings
from jobs.storage.object_paths import AnyPath, ObjectPath

LOCK_FILE = ".lock"


class RunBusy(RepriseError):
    """Another process is replaying the same run."""


def _busy(run_id: str, holder: str) -> RunBusy:
    return RunBusy(f"run {run_id!r} is being replayed by another process ({holder}); nothing "
                   "was written by this one: wait for it to finish, then run the command again "
                   "to resume or check the run")


@contextmanager
def run_lock(run_dir: AnyPath, run_id: str) -> Iterator[None]:
    """Hold the run's lock for the block; raise :class:`RunBusy` at once when another process
    holds it (the kernel releases it when that process ends, even by SIGKILL; on an object
    store its lease runs out)."""
    if isinstance(run_dir, ObjectPath):
        try:
            with object_lock(run_dir / LOCK_FILE, load_settings().lock_lease):
                yield
        except ObjectLockBusy as exc:
            raise _busy(run_id, str(exc)) from None
        return
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise _busy(run_id, f"pid {holder}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def is_locked(run_dir: AnyPath) -> bool:
    """True when a process holds the run's lock now (a replay of it is in progress)."""
    if isinstance(run_dir, ObjectPath):
        return holder_of(run_dir / LOCK_FILE, load_settings().lock_lease) is not None
    path = run_dir / LOCK_FILE
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False

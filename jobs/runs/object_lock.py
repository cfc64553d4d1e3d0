"""The run lock on an object store: a lock object written with a conditional put and held by a
lease.

An object store has no file locks. The lock is the object ``runs/<run_id>/.lock``: a process
takes it by creating it with ``If-None-Match: *`` (the store refuses the write when the object
exists, so of two processes on any machines exactly one succeeds), renews it every quarter of
the lease by rewriting it with ``If-Match`` on its own ETag, and deletes it (``If-Match`` again)
when done. A holder that died stops renewing: once the object is older than the lease by the
store's own clock (its ``Last-Modified`` against the ``Date`` of the store's answer, so the
machines' clocks do not matter), another process takes it over, again with ``If-Match`` on the
ETag it read, so of several takers one wins. A holder that loses its lease (it could not renew
for a whole lease) carries on, but whatever it commits after that goes through Delta's own
conditional commits, which never let two writers write the same version.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from email.utils import parsedate_to_datetime

from engine.errors import RepriseError
from jobs.storage.filesystems import shared_client
from jobs.storage.object_paths import ObjectPath

#: Seconds a lock object holds without renewal by default (``REPRISE_LOCK_LEASE``).
LEASE_SECONDS = 60.0


class ObjectLockBusy(RepriseError):
    """Another live process holds the lock object."""


def _bucket_key(lock: ObjectPath) -> tuple[str, str]:
    bucket, _, key = lock.uri.split("://", 1)[1].partition("/")
    return bucket, key


def _status(exc: Exception) -> int | None:
    return getattr(exc, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode")


def holder_of(lock: ObjectPath, lease: float = LEASE_SECONDS) -> str | None:
    """Who holds the lock object now (its text), or None: there is none, or its lease ran
    out."""
    from botocore.exceptions import ClientError

    bucket, key = _bucket_key(lock)
    try:
        got = shared_client().get_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        if _status(exc) == 404:
            return None
        raise
    return None if _age(got) >= lease else got["Body"].read().decode(errors="replace")


def _age(answer: dict) -> float:
    """Seconds since the object of a GET answer was last written, by the store's clock."""
    now = parsedate_to_datetime(answer["ResponseMetadata"]["HTTPHeaders"]["date"])
    return (now - answer["LastModified"]).total_seconds()


def _acquire(client, bucket: str, key: str, me: str, lease: float) -> str:
    """Create the lock object, or take over one whose lease ran out; its ETag."""
    from botocore.exceptions import ClientError

    for _ in range(3):
        try:
            return client.put_object(Bucket=bucket, Key=key, Body=me.encode(),
                                     IfNoneMatch="*")["ETag"]
        except ClientError as exc:
            if _status(exc) not in (409, 412):
                raise
        try:
            got = client.get_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            if _status(exc) == 404:
                continue  # released meanwhile
            raise
        holder = got["Body"].read().decode(errors="replace")
        if _age(got) < lease:
            raise ObjectLockBusy(holder)
        try:  # an expired lease: take it over (of several takers, one wins)
            return client.put_object(Bucket=bucket, Key=key, Body=me.encode(),
                                     IfMatch=got["ETag"])["ETag"]
        except ClientError as exc:
            if _status(exc) not in (409, 412):
                raise
    raise ObjectLockBusy("another process that took it just now")


@contextmanager
def object_lock(lock: ObjectPath, lease: float = LEASE_SECONDS) -> Iterator[None]:
    """Hold the lock object ``lock`` for the block, renewing its lease; raise
    :class:`ObjectLockBusy` (its message: the holder) at once when a live process holds it."""
    from botocore.exceptions import BotoCoreError, ClientError

    client = shared_client()
    bucket, key = _bucket_key(lock)
    me = f"{socket.gethostname()} pid {os.getpid()}"
    held = {"etag": _acquire(client, bucket, key, me, lease)}
    done = threading.Event()

    def renew() -> None:
        while not done.wait(lease / 4):
            try:
                held["etag"] = client.put_object(Bucket=bucket, Key=key, Body=me.encode(),
                                                 IfMatch=held["etag"])["ETag"]
            except ClientError as exc:
                if _status(exc) in (409, 412):
                    return  # taken over after the lease ran out: see the module docstring
            except BotoCoreError:
                pass  # the store did not answer: try again before the lease runs out

    renewing = threading.Thread(target=renew, name=f"lease of {lock.uri}", daemon=True)
    renewing.start()
    try:
        yield
    finally:
        done.set()
        renewing.join()
        # (taken over after the lease ran out, or the store unreachable: the lease ends it)
        with suppress(ClientError, BotoCoreError):
            client.delete_object(Bucket=bucket, Key=key, IfMatch=held["etag"])

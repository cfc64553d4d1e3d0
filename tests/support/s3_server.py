"""A real S3-compatible server for the tests: moto in server mode on 127.0.0.1 at a free port,
in its own process (pip-installable, no binary to download)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: The credentials the server is given (moto accepts any; the tests grep output for the secret).
ACCESS_KEY = "reprise-test-key"
SECRET_KEY = "reprise-test-secret-4f1c9a"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def s3_server(env: dict[str, str] | None = None, port: int | None = None,
              log: Path | None = None) -> Iterator[str]:
    """Run a moto S3 server (with the environment ``env``, on ``port`` or a free one) until the
    block ends; yields its endpoint URL. ``log``: the file its request log goes to (a line a
    request, see :func:`logged_requests`)."""
    port = port or free_port()
    out = log.open("wb") if log else subprocess.DEVNULL
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                             str(port)], stdout=out, stderr=out, env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the moto S3 server did not start on port {port}"
                                       ) from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if log:
            out.close()


#: A request in moto's log: ``"METHOD TARGET HTTP/1.1" STATUS``.
_REQUEST = re.compile(r'"([A-Z]+) (\S+) HTTP/1\.1" (\d{3})')


def logged_requests(log: Path, skip: int = 0) -> list[tuple[str, str, int]]:
    """The requests the server of :func:`s3_server` has logged to ``log`` so far, after the
    first ``skip``: (method, target with its query, status), in order."""
    found = _REQUEST.findall(log.read_text(errors="replace"))
    return [(method, target, int(status)) for method, target, status in found[skip:]]


def aws_env(endpoint: str) -> dict[str, str]:
    """The AWS settings of a warehouse on the server at ``endpoint``."""
    return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true",
            "AWS_EC2_METADATA_DISABLED": "true"}

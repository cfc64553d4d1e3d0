"""Ending a process that used delta-rs and pyarrow without the interpreter's teardown.

Python's normal exit runs native destructors while threads of delta-rs and pyarrow may still be
running; now and then that aborts the process ("terminate called without an active exception",
status 134) after its work is done. The ``reprise`` command, the demo and the test run end
through :func:`exit_now` instead (a Spark JVM started by the process exits when its gateway's
standard input closes).
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn


def exit_now(code: int) -> NoReturn:
    """Flush the standard streams and end the process with status ``code``."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

"""Spark's driver JVM launched while a command imports its own modules.

A ``reprise replay`` forced onto Spark spends about a second importing its modules (pandas,
pyarrow, the engine) before it could launch the JVM, which then takes most of a second to come
up. :func:`start` runs the launch in a background thread at once, so the two overlap;
:func:`wait` (called before any other launch, see :mod:`jobs.runtime.jvm_stderr`) lets that
launch end first, so a process never launches two JVMs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

_LAUNCH: dict[str, threading.Thread] = {}


def start(launch: Callable[[], None]) -> None:
    """Run ``launch`` (which launches the driver JVM) in a background thread, once per
    process."""
    if "thread" not in _LAUNCH:
        _LAUNCH["thread"] = threading.Thread(target=launch, name="reprise-jvm-launch",
                                             daemon=True)
        _LAUNCH["thread"].start()


def wait() -> None:
    """Let a launch :func:`start` began end (nothing when there is none, or in that thread)."""
    thread = _LAUNCH.get("thread")
    if thread is not None and thread is not threading.current_thread():
        thread.join()

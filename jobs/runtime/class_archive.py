"""A class-data-sharing archive of the Spark driver JVM's classes (Java AppCDS), made once per
installation: the driver JVM then maps the classes Spark loads at its start from the archive
instead of reading, parsing and verifying them from the jars, which takes most of the
SparkContext's start (docs/operations/performance.md).

``python -m jobs.runtime.make_class_archive`` makes it (``make test`` and ``make demo`` do,
once): it starts a session whose JVM dumps the classes it loaded at exit
(``-XX:ArchiveClassesAtExit``), runs the kinds of job a replay runs, stops the JVM and moves
the archive into the environment (:data:`ARCHIVE`) with a note of what it was made for (the
``java`` binary and the Spark jars). A session uses it (``-XX:SharedArchiveFile``) only when the
note matches this installation: an archive made by another JVM or Spark, or one that is missing,
is left out and the JVM starts as it would without (a half-written archive can crash the JVM,
so one is never given the archive's name before the JVM that wrote it has exited). A JVM that
does not start with the archive is started again without it; the archive is removed only when
that one starts.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: The archive, in the environment (the virtualenv of ``make``) it was made for.
ARCHIVE = Path(sys.prefix) / "reprise-spark-classes.jsa"
#: What the archive was made for (see :func:`fingerprint`).
NOTE = ARCHIVE.with_suffix(".json")


def fingerprint() -> dict[str, object]:
    """The installation an archive is valid for: the ``java`` binary Spark launches (its path,
    size and time) and the names and sizes of Spark's jars."""
    import pyspark

    home = os.environ.get("JAVA_HOME")
    java = Path(home, "bin", "java") if home else Path(shutil.which("java") or "java")
    java = java.resolve()
    stat = java.stat() if java.exists() else None
    jars = Path(pyspark.__file__).parent / "jars"
    listing = sorted((p.name, p.stat().st_size) for p in jars.glob("*.jar"))
    return {"java": str(java), "java_size": stat and stat.st_size,
            "java_mtime": stat and int(stat.st_mtime),
            "jars": hashlib.sha256(json.dumps(listing).encode()).hexdigest()}


def usable_archive() -> Path | None:
    """The archive, when it exists and its note says it was made for this installation, with
    its size (else None)."""
    try:
        note = json.loads(NOTE.read_text())
        size = ARCHIVE.stat().st_size
    except (OSError, ValueError):
        return None
    if not isinstance(note, dict) or note.get("size") != size:
        return None
    return ARCHIVE if note.get("made_for") == fingerprint() else None


#: While True (see :func:`left_out`), sessions start without the archive.
_LEFT_OUT = {"now": False}


@contextmanager
def left_out() -> Iterator[None]:
    """Start sessions without the archive in the block (to tell whether a JVM that did not
    start failed because of it)."""
    _LEFT_OUT["now"] = True
    try:
        yield
    finally:
        _LEFT_OUT["now"] = False


def java_option() -> str:
    """The driver JVM's option that maps the archive ("" without a usable one)."""
    archive = None if _LEFT_OUT["now"] else usable_archive()
    if archive is None:
        return ""
    # (a JVM that cannot map it writes its crash report beside the JVM's log, not here)
    crash = Path(tempfile.gettempdir()) / f"reprise-jvm-crash-{os.getuid()}.log"
    return f"-XX:SharedArchiveFile={archive} -Xlog:cds=off -Xlog:cds+dynamic=off " \
        f"-XX:ErrorFile={crash}"


def discard() -> None:
    """Remove the archive and its note (a JVM failed to start with them)."""
    for path in (NOTE, ARCHIVE):
        path.unlink(missing_ok=True)

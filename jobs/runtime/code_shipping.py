"""Ship the project's own code (the ``engine`` and ``jobs`` packages) to a cluster's executors.

On a cluster master the session adds one zip of both packages with ``addPyFile``: Spark copies
it into every executor's working directory and puts it first on each task's module path, so
executors run the driver's code whatever is installed on the nodes (the nodes still need the
pinned third-party dependencies). The Python worker daemon (``jobs.runtime.worker_daemon``) is
started
before any task, so the zip is also on the executors' ``PYTHONPATH``, by its name relative to
the executor's working directory (:data:`EXECUTOR_PYTHONPATH`).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import zipfile
from pathlib import Path

from pyspark.sql import SparkSession

from jobs.settings import PROJECT_ROOT

PACKAGES = ("engine", "jobs")
#: The zip's file name; Spark fetches added files into the executor's working directory.
CODE_ZIP = "reprise_code.zip"
EXECUTOR_PYTHONPATH = CODE_ZIP
#: Fixed member timestamps: the same sources give the same bytes.
_EPOCH = (1980, 1, 1, 0, 0, 0)


def package_files(root: Path = PROJECT_ROOT) -> list[Path]:
    """The Python sources of the shipped packages, relative to ``root``, in a fixed order."""
    return sorted(p.relative_to(root) for package in PACKAGES
                  for p in (root / package).rglob("*.py") if "__pycache__" not in p.parts)


def build_code_zip(directory: Path, root: Path = PROJECT_ROOT) -> Path:
    """Write the zip of the shipped packages into ``directory``; return its path."""
    target = directory / CODE_ZIP
    partial = directory / f".{CODE_ZIP}.partial"
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for relative in package_files(root):
            info = zipfile.ZipInfo(relative.as_posix(), _EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, (root / relative).read_bytes())
    partial.replace(target)
    return target


def ship_code(spark: SparkSession) -> Path | None:
    """Add the zip of the project's packages to ``spark``'s context, once per context; returns
    the zip written (None when the context already has it). The zip lives in a private
    temporary directory removed when the process ends (Spark serves it from there)."""
    sc = spark.sparkContext
    if CODE_ZIP in sc._python_includes:
        return None
    directory = Path(tempfile.mkdtemp(prefix="reprise-code-"))  # 0700: only this user
    atexit.register(shutil.rmtree, directory, True)
    path = build_code_zip(directory)
    sc.addPyFile(str(path))
    return path

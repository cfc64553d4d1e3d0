"""Where the numba kernels are cached on disk, and loading a generated kernel's function.

Each generated kernel is written as a module file named after the hash of its source and
imported, so that numba caches its machine code next to it and a new process loads it instead of
compiling. The directory is a setting of the engine, never read from the environment:
``configure_cache(path)`` chooses it for the process (the jobs layer passes its
``REPRISE_KERNEL_DIR`` setting), ``configure_cache(None)`` turns the disk cache off (kernels are
then compiled in memory in every process). Until configured it is :data:`DEFAULT_CACHE_DIR`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from ..own_directory import only_mine

#: The cache directory of a process that never called :func:`configure_cache`: in the user's
#: cache directory, never a shared temporary directory (the files are imported).
DEFAULT_CACHE_DIR = Path("~/.cache/reprise/qre-kernels")

_settings: dict[str, Path | None] = {"dir": DEFAULT_CACHE_DIR}


def configure_cache(path: str | os.PathLike[str] | None) -> None:
    """Cache generated kernels and their machine code in the directory ``path`` (created when
    first needed; ``~`` is expanded), or nowhere if ``path`` is None. Kernels already loaded in
    this process stay loaded."""
    _settings["dir"] = None if path is None else Path(path)


def cache_dir() -> Path | None:
    """The directory configured for the disk cache, or None when it is off."""
    return _settings["dir"]


def load_kernel_function(source: str) -> Any:
    """The ``kernel`` function of ``source``: imported from a file so that numba caches the
    machine code on disk, or executed in memory when no file can be written."""
    name = "reprise_qre_kernel_" + hashlib.sha256(source.encode()).hexdigest()[:24]
    if name in sys.modules:
        return sys.modules[name].kernel
    path = _write_source(name, source.replace("cache=CACHE", "cache=True"))
    if path is None:
        namespace: dict[str, Any] = {}
        exec(compile(source.replace("cache=CACHE", "cache=False"), name, "exec"), namespace)
        return namespace["kernel"]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = sys.modules[name] = importlib.util.module_from_spec(spec)  # numba's disk cache
    try:  # finds the module's globals by name
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module.kernel


def _write_source(name: str, source: str) -> Path | None:
    """The path of the module file ``name`` holding exactly ``source`` (written atomically), or
    None if there is no cache directory, it cannot be written, or other users can write to it
    (they could change what is imported from there, numba's cache included)."""
    directory = cache_dir()
    if directory is None:
        return None
    try:
        folder = directory.expanduser()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not only_mine(folder):
            return None
        path = folder / f"{name}.py"
        if path.exists() and path.read_text() == source:
            return path
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(source)
        os.replace(partial, path)
    except (OSError, RuntimeError):  # RuntimeError: no home directory
        return None
    return path

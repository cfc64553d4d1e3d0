"""Whether a directory is private to this user: files imported from it (generated QRE kernels,
numba's cache) must not be writable by anyone else."""

from __future__ import annotations

import os
from pathlib import Path


def only_mine(directory: Path) -> bool:
    """Whether ``directory`` belongs to this user and no one else can write to it."""
    info = directory.stat()
    return info.st_uid == os.getuid() and not info.st_mode & 0o022

"""Names that become paths in the warehouse (recordings, queries, run ids): one rule, one check."""

from __future__ import annotations

import re
from pathlib import Path

from engine.errors import RepriseError

#: A safe name: starts with a letter or digit, then letters, digits, ``_``, ``.`` or ``-``.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
MAX_NAME_LENGTH = 200


class UnsafeName(RepriseError):
    """A name that would become a path outside its warehouse directory (or no valid path)."""


def check_name(what: str, name: str) -> str:
    """Return ``name`` when it is a safe single path component; raise :class:`UnsafeName`
    naming ``what`` (e.g. ``run id``, ``recording name``) and the input otherwise."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name) or ".." in name \
            or len(name) > MAX_NAME_LENGTH:
        raise UnsafeName(
            f"{what} {name!r} is not a valid name: use letters, digits, '_', '.' and '-' "
            f"(starting with a letter or digit, no '..', at most {MAX_NAME_LENGTH} characters)")
    return name


def inside(root: Path, what: str, name: str, *parts: str) -> Path:
    """``root/parts.../name`` after checking ``name``, and that the resolved path stays under
    ``root`` (a symbolic link inside the warehouse cannot lead out of it either)."""
    path = root.joinpath(*parts, check_name(what, name))
    if not path.resolve().is_relative_to(root.resolve()):
        raise UnsafeName(f"{what} {name!r} leads outside the warehouse {root}")
    return path

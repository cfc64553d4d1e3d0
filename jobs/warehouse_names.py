"""Names that become paths in the warehouse (recordings, queries, run ids): one rule, one check."""

from __future__ import annotations

from pathlib import Path

from engine.errors import RepriseError
from engine.names import name_problem


class UnsafeName(RepriseError):
    """A name that would become a path outside its warehouse directory (or no valid path)."""


def check_name(what: str, name: str) -> str:
    """Return ``name`` when it is a safe single path component (:mod:`engine.names`); raise
    :class:`UnsafeName` naming ``what`` (e.g. ``run id``, ``recording name``) and the input
    otherwise."""
    problem = name_problem(name)
    if problem is not None:
        raise UnsafeName(f"{what} {problem}")
    return name


def inside(root: Path, what: str, name: str, *parts: str) -> Path:
    """``root/parts.../name`` after checking ``name``, and that the resolved path stays under
    ``root`` (a symbolic link inside the warehouse cannot lead out of it either)."""
    path = root.joinpath(*parts, check_name(what, name))
    if not path.resolve().is_relative_to(root.resolve()):
        raise UnsafeName(f"{what} {name!r} leads outside the warehouse {root}")
    return path

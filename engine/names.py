"""The rule for names that become paths (recordings, queries, run ids): letters, digits, ``_``,
``.`` and ``-``, starting with a letter or digit, no ``..``, at most 200 characters."""

from __future__ import annotations

import re

#: A safe name: starts with a letter or digit, then letters, digits, ``_``, ``.`` or ``-``.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
MAX_NAME_LENGTH = 200


def name_problem(name: object) -> str | None:
    """Why ``name`` is not a safe single path component (None when it is)."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name) or ".." in name \
            or len(name) > MAX_NAME_LENGTH:
        return (f"{name!r} is not a valid name: use letters, digits, '_', '.' and '-' (starting "
                f"with a letter or digit, no '..', at most {MAX_NAME_LENGTH} characters)")
    return None

"""Where a table's files are: local paths and URIs, and pyarrow's file system for each."""

from __future__ import annotations

import os
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.fs


def local_path(path: str) -> str:
    """``path`` without a ``file://`` scheme."""
    return path[len("file://"):] if path.startswith("file://") else path


def is_remote(path: str) -> bool:
    """Whether ``path`` is a URI of a store other than the local file system."""
    return "://" in path and not path.startswith("file://")


def filesystem(path: str) -> tuple[pa.fs.FileSystem, str]:
    """pyarrow's file system of a local path or URI, and the path within it."""
    if is_remote(path):
        return pa.fs.FileSystem.from_uri(path)
    return pa.fs.LocalFileSystem(), local_path(path)


def exists(path: str) -> bool:
    """Whether there is a file or directory at the local path or URI ``path``."""
    if not is_remote(path):
        return os.path.exists(local_path(path))  # (a commit checks two log entries: cheaper)
    fs, inner = filesystem(path)
    return fs.get_file_info(inner).type != pa.fs.FileType.NotFound


def names(directory: str) -> frozenset[str]:
    """The names of the entries of ``directory`` (a local path or URI; none when there is no
    such directory). Locally one ``listdir``, which reads no entry's attributes: a continued
    run's log and data directories gain entries with every segment, and a listing that reads
    each one's grows costly."""
    if not is_remote(directory):
        try:
            return frozenset(os.listdir(local_path(directory)))
        except (FileNotFoundError, NotADirectoryError):
            return frozenset()
    fs, inner = filesystem(directory)
    try:
        infos = fs.get_file_info(pa.fs.FileSelector(inner, allow_not_found=True))
    except NotADirectoryError:
        return frozenset()
    return frozenset(info.base_name for info in infos)


def table_root(table: str) -> str:
    """A table's root as its files are named (a local path, or the URI of a remote table)."""
    return (table if is_remote(table) else local_path(table)).rstrip("/")


def logged_file(root: str, logged: str) -> str:
    """The file a log action names (relative and percent-encoded, or an absolute URI) as a path
    under ``root`` (:func:`table_root`), or as the local path or URI it names; a relative path
    is normalised without resolving links (a table's files are named by the paths its log
    holds, not by where links lead)."""
    parsed = urlparse(logged)
    if parsed.scheme == "file":
        return os.path.realpath(unquote(parsed.path))
    if parsed.scheme:
        return logged
    relative = unquote(logged)
    if relative.startswith("/"):
        return relative
    return f"{root}/{relative}" if is_remote(root) else os.path.normpath(f"{root}/{relative}")

"""Staged Parquet files that no version of a table's Delta log references (left by killed runs).

Tables are named by local paths or URIs; the files are listed and deleted through pyarrow's
file systems, the log is read by :mod:`jobs.storage.delta_log`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from jobs.storage.delta_log import newest_entry
from jobs.storage.delta_log import referenced_files as logged_files
from jobs.storage.locations import filesystem, is_remote, names, table_root

DATA = "data"


def _root(table: str | Path) -> str:
    """The table's root as the log's paths are resolved against (a local one with its links
    resolved, as the files a log names are compared by path)."""
    root = table_root(str(table))
    return root if is_remote(root) else os.path.realpath(root)


def referenced_files(table: str | Path, after: int | None = None) -> set[str] | None:
    """Every data file any version of ``table``'s log (after version ``after``, when given)
    adds or removes (see :func:`jobs.storage.delta_log.referenced_files`); None when nothing
    may be deleted."""
    return logged_files(_root(table), after)


@dataclass(frozen=True)
class Mark:
    """What a table's directory held at some moment: its ``data/`` entries and the version of
    its newest log entry (-1: none)."""

    data: frozenset[str]
    version: int


def mark(table: str | Path) -> Mark:
    """The entries of ``table``'s ``data/`` and its newest version now (one directory listing;
    the log is not listed)."""
    root = table_root(str(table))
    newest = newest_entry(root)
    return Mark(names(f"{root}/{DATA}"), -1 if newest is None else newest)


def _files_under(fs: pa.fs.FileSystem, entry: pa.fs.FileInfo) -> list[pa.fs.FileInfo]:
    if entry.type == pa.fs.FileType.File:
        return [entry]
    return sorted((i for i in fs.get_file_info(pa.fs.FileSelector(entry.path, recursive=True,
                                                                 allow_not_found=True))
                   if i.type == pa.fs.FileType.File and i.base_name.endswith(".parquet")),
                  key=lambda i: i.path)


def _remove_empty(fs: pa.fs.FileSystem, entry: pa.fs.FileInfo) -> None:
    """Delete the directories under ``entry`` (and ``entry``) that are left empty."""
    if entry.type != pa.fs.FileType.Directory:
        return
    inside = fs.get_file_info(pa.fs.FileSelector(entry.path, recursive=True))
    directories = sorted((i.path for i in inside if i.type == pa.fs.FileType.Directory),
                         reverse=True)
    for directory in [*directories, entry.path]:
        if not fs.get_file_info(pa.fs.FileSelector(directory)):
            fs.delete_dir(directory)


def remove_unreferenced(table: str | Path, since: Mark | None = None) -> list[str]:
    """Delete the Parquet files under ``table/data`` that no version of its log references
    (and directories left empty); return what was deleted (paths under the table as it is
    named). With ``since``, look only at the ``data/`` entries made after that mark, and read
    only the log entries of the versions after it (no earlier version can reference a file
    staged after it): the cost does not grow with the table's history. Call it only while no
    one else writes the table (a replay holds the run's lock)."""
    named = table_root(str(table))
    return _remove(table, names(f"{named}/{DATA}") - (since.data if since else frozenset()),
                   since.version if since else None)


def _remove(table: str | Path, new: frozenset[str], after: int | None) -> list[str]:
    """:func:`remove_unreferenced` of the ``data/`` entries ``new``, against the log entries
    after version ``after`` (None: the whole log)."""
    named = table_root(str(table))
    fs, data = filesystem(f"{named}/{DATA}")
    if not new:
        return []
    new = sorted(new)
    referenced = referenced_files(table, after)
    if referenced is None:
        return []
    root = _root(table)
    entries = (_objects(fs, data, new) if is_remote(named)
               else fs.get_file_info([f"{data}/{name}" for name in new]))
    removed = []
    for entry in entries:
        gone = 0
        for f in _files_under(fs, entry):
            relative = f.path[len(data) + 1:]
            if f.base_name.endswith(".parquet") and f"{root}/{DATA}/{relative}" not in referenced:
                fs.delete_file(f.path)
                removed.append(f"{named}/{DATA}/{relative}")
                gone += 1
        if gone or not is_remote(named):  # (a prefix is gone with its last object)
            _remove_empty(fs, entry)
    return removed


def _objects(fs: pa.fs.FileSystem, data: str, new: list[str]) -> list[pa.fs.FileInfo]:
    """The entries ``new`` of a table's ``data`` prefix on an object store, without asking the
    store (pyarrow asks twice of a prefix, a HEAD and a listing): a Parquet name is an object,
    any other a prefix, whose objects :func:`_files_under` lists."""
    return [pa.fs.FileInfo(f"{data}/{name}", pa.fs.FileType.File if name.endswith(".parquet")
                           else pa.fs.FileType.Directory) for name in new]


def remove_leftovers(tables: Iterable[str], since: Mapping[str, Mark] | None = None
                     ) -> list[str]:
    """:func:`remove_unreferenced` over each of a run's tables (local paths or URIs), each
    ``since`` its mark when given; what was deleted."""
    return [f for table in tables
            for f in remove_unreferenced(table, since[table] if since is not None else None)]


def marks(tables: Iterable[str]) -> dict[str, Mark]:
    """:func:`mark` of each of a run's tables (local paths or URIs)."""
    return {table: mark(table) for table in tables}


def clean_and_mark(tables: Iterable[str]) -> dict[str, Mark]:
    """:func:`remove_leftovers` of a run's tables, then their :func:`marks`, each table's
    ``data/`` listed once (on an object store a request per table less). A mark holds the
    entries files were deleted from too: what is left in them is referenced by versions up to
    the mark's, which the cleanup after the run does not read."""
    found = {}
    for table in tables:
        root = table_root(str(table))
        present = names(f"{root}/{DATA}")
        _remove(table, present, None)
        newest = newest_entry(root)
        found[table] = Mark(present, -1 if newest is None else newest)
    return found

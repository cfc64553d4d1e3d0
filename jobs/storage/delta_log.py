"""A reader of a Delta table's log (its JSON entries and checkpoints) through pyarrow's file
systems, for local paths and URIs alike: a few new versions without opening the table (which
replays its whole log), the data files any version names, and every application transaction.
Both backends and the cleanup of staged files read the log through it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq

from jobs.storage.filesystems import read_object
from jobs.storage.locations import (
    file_exists,
    filesystem,
    logged_file,
    names,
    table_root,
)

LOG = "_delta_log"


def _entry_name(version: int) -> str:
    return f"{version:020d}.json"


def log_dir(table: str) -> str:
    """The log directory of the table at ``table`` (a local path or URI)."""
    return f"{table_root(table)}/{LOG}"


def entry_exists(table: str, version: int) -> bool:
    """Whether the table's log has the JSON entry of ``version`` (a commit made it)."""
    return file_exists(f"{log_dir(table)}/{_entry_name(version)}")


def read_log_file(path: str) -> bytes:
    """The bytes of the log file at the local path or URI ``path`` (on S3 one GET, where
    pyarrow asks for its size first); FileNotFoundError when there is none."""
    if path.startswith("s3://"):
        return read_object(path)
    fs, inner = filesystem(path)
    with fs.open_input_stream(inner) as stream:
        return stream.read()


def _text(path: str) -> str:
    return read_log_file(path).decode()


def _actions(entry: str) -> list[dict]:
    """The actions of the log entry at the local path or URI ``entry``."""
    return [json.loads(line) for line in _text(entry).splitlines() if line.strip()]


def log_actions(table: str, first: int, last: int) -> list[tuple[int, dict]] | None:
    """The actions of the JSON log entries of versions ``first .. last`` of ``table``, as
    (version, action) in order; None when one of these entries is missing."""
    actions: list[tuple[int, dict]] = []
    for version in range(first, last + 1):
        try:
            actions += [(version, action)
                        for action in _actions(f"{log_dir(table)}/{_entry_name(version)}")]
        except FileNotFoundError:
            return None
    return actions


@dataclass(frozen=True)
class LoggedCommit:
    """A commit as its JSON log entry gives it: its commit information with its ``version``
    (as :func:`recent_commits` gives it; only the version when the entry has none), the data
    files it adds (paths under the table's root -> their row count from the add's stats, None
    without them) and those it removes (path -> whether the removal takes rows away: not for a
    ``remove`` whose ``dataChange`` is false, as a commit that only rearranges files writes)."""

    info: dict
    added: dict[str, int | None]
    removed: dict[str, bool]

    @property
    def version(self) -> int:
        return int(self.info["version"])

    @property
    def rows_removed(self) -> list[str]:
        """The data files it removes with their rows, sorted."""
        return sorted(path for path, rows in self.removed.items() if rows)


def logged_commits(table: str, first: int, last: int) -> list[LoggedCommit] | None:
    """Each commit of versions ``first .. last`` of ``table``, in order, from its JSON log
    entry (one read of each entry serves whatever is asked of the commits); None when one of
    these log entries is missing."""
    actions = log_actions(table, first, last)
    if actions is None:
        return None
    root = table_root(table)
    commits = {version: LoggedCommit({"version": version}, {}, {})
               for version in range(first, last + 1)}
    for version, action in actions:
        commit = commits[version]
        if "commitInfo" in action:
            commit.info.update({**action["commitInfo"], "version": version})
        elif "add" in action:
            stats = json.loads(action["add"].get("stats") or "{}")
            commit.added.setdefault(logged_file(root, action["add"]["path"]),
                                    stats.get("numRecords"))
        elif "remove" in action:
            commit.removed[logged_file(root, action["remove"]["path"])] = \
                action["remove"].get("dataChange", True) is not False
    return list(commits.values())


def appended_files(commits: list[LoggedCommit]
                   ) -> tuple[dict[str, tuple[int, int | None]], set[str]]:
    """The data files ``commits`` (in version order) add, by path under the table's root (see
    :func:`jobs.storage.locations.logged_file`): the version that first added each and its row
    count (None without stats); and the files they remove."""
    added: dict[str, tuple[int, int | None]] = {}
    removed: set[str] = set()
    for commit in commits:
        for path, rows in commit.added.items():
            added.setdefault(path, (commit.version, rows))
        removed.update(commit.removed)
    return added, removed


def appended(table: str, first: int, last: int
             ) -> tuple[dict[str, tuple[int, int | None]], set[str]] | None:
    """:func:`appended_files` of the commits of versions ``first .. last`` of ``table``; None
    when one of these log entries is missing."""
    commits = logged_commits(table, first, last)
    return None if commits is None else appended_files(commits)


def added_in(table: str, first: int, last: int) -> dict[str, int] | None:
    """The version of ``first .. last`` whose commit added each data file of ``table`` (by the
    file's path under the table's root); None when one of these log entries is missing."""
    found = appended(table, first, last)
    return None if found is None else {path: v for path, (v, _) in found[0].items()}


@dataclass(frozen=True)
class LoggedState:
    """A table's state at one version as its JSON log entries give it: the ``metaData`` and
    ``protocol`` actions in force and the ``add`` actions of the live data files, by the path
    each names (percent-decoded, relative to the table's root unless absolute)."""

    metadata: dict
    protocol: dict
    live: dict[str, dict]


def logged_state(table: str, version: int) -> LoggedState | None:
    """The state of ``table`` at ``version`` from its JSON log entries ``0 .. version``; None
    when one of these entries is missing."""
    actions = log_actions(table, 0, version)
    if actions is None:
        return None
    found: dict[str, dict] = {"metaData": {}, "protocol": {}}
    live: dict[str, dict] = {}
    for _, action in actions:
        if "add" in action:
            live[unquote(action["add"]["path"])] = action["add"]
        elif "remove" in action:
            live.pop(unquote(action["remove"]["path"]), None)
        for kind in found.keys() & action.keys():
            found[kind] = action[kind]
    return LoggedState(found["metaData"], found["protocol"], live)


def first_added(table: str, first: int, last: int) -> dict[str, int] | None:
    """The first version of ``first .. last`` whose log entry adds each path of ``table``
    (keyed as the entry names it, and percent-decoded); None when one of these entries is
    missing."""
    actions = log_actions(table, first, last)
    if actions is None:
        return None
    added: dict[str, int] = {}
    for version, action in actions:
        if "add" in action:
            path = action["add"]["path"]
            added.setdefault(path, version)
            added.setdefault(unquote(path), version)
    return added


def recent_commits(table: str, latest: int, limit: int) -> list[dict] | None:
    """The commit information of the newest ``limit`` versions of ``table`` up to ``latest``,
    newest first, each with its ``version`` (as delta-rs's history gives it, from those
    versions' log entries only: its own history reads every entry of the log); None when one of
    these entries is missing or holds no commit information."""
    actions = log_actions(table, max(0, latest - limit + 1), latest)
    if actions is None:
        return None
    commits = {version: {**action["commitInfo"], "version": version}
               for version, action in actions if "commitInfo" in action}
    if len(commits) != latest - max(0, latest - limit + 1) + 1:
        return None
    return [commits[v] for v in sorted(commits, reverse=True)]


def changes(table: str, version: int, latest: int) -> tuple[set[str], set[str]] | None:
    """The data files (paths under the table's root) the commits of versions ``version+1 ..
    latest`` of ``table`` add and remove; None when one of these log entries is missing."""
    found = appended(table, version + 1, latest)
    return None if found is None else (set(found[0]), found[1])


def log_names(table: str) -> frozenset[str]:
    """The names of the files in the table's log directory (none when there is no log)."""
    return names(log_dir(table))


def _is_entry(name: str) -> bool:
    return name.endswith(".json") and name[:20].isdigit()


def _is_checkpoint(name: str) -> bool:
    return ".checkpoint" in name and name.endswith(".parquet") and name[:20].isdigit()


def _checkpoint(fs: pa.fs.FileSystem, inner: str, kinds: set[str]) -> pa.Table:
    columns = set(pq.read_schema(inner, filesystem=fs).names) & kinds
    return pq.read_table(inner, filesystem=fs, columns=sorted(columns))


def newest_entry(table: str, known: int | None = None) -> int | None:
    """The version of the table's newest JSON log entry (None when it has none), found by
    trying the versions after ``known`` (one whose entry exists; default: the last
    checkpoint's) in turn: no listing of the log, which gains files with every commit."""
    version = last_checkpoint(table) if known is None else known
    if version is None:
        if not entry_exists(table, 0):
            return None
        version = 0
    while entry_exists(table, version + 1):
        version += 1
    return version


def _named(root: str, actions: list[dict]) -> set[str]:
    return {logged_file(root, action[kind]["path"]) for action in actions
            for kind in ("add", "remove") if kind in action}


def referenced_files(table: str, after: int | None = None) -> set[str] | None:
    """Every data file any version of ``table``'s log adds or removes (from the JSON entries
    and the checkpoints), as paths under the table's root; None when the log holds something
    this reader does not understand (then nothing may be deleted). With ``after`` (a version,
    -1 for all), only the JSON entries of the versions after it, read one by one until the
    first that does not exist (the log is not listed)."""
    root = table_root(table)
    fs, log = filesystem(log_dir(root))
    found: set[str] = set()
    if after is not None:
        version = after + 1
        while True:
            try:
                actions = _actions(f"{log_dir(root)}/{_entry_name(version)}")
            except FileNotFoundError:
                return found
            except ValueError:
                return None
            found |= _named(root, actions)
            version += 1
    for name in sorted(log_names(root)):
        inner = f"{log}/{name}"
        if _is_entry(name):
            try:
                actions = _actions(f"{log_dir(root)}/{name}")
            except ValueError:
                return None
            found |= _named(root, actions)
        elif _is_checkpoint(name):
            checkpoint = _checkpoint(fs, inner, {"add", "remove"})
            for kind in checkpoint.column_names:
                found.update(logged_file(root, a["path"]) for a in checkpoint[kind].to_pylist()
                             if a)
        elif not (name.endswith((".crc", ".tmp")) or name == "_last_checkpoint"
                  or name.startswith(".")):
            return None
    return found


def txn_version(table: str, app_id: str) -> int | None:
    """The highest version any log entry or checkpoint of ``table`` records for the
    application transaction ``app_id`` (None when none does)."""
    root = table_root(table)
    fs, log = filesystem(log_dir(root))
    versions: list[int] = []
    for name in log_names(root):
        inner = f"{log}/{name}"
        if _is_entry(name):
            versions += [int(a["txn"]["version"]) for a in _actions(f"{log_dir(root)}/{name}")
                         if "txn" in a and a["txn"].get("appId") == app_id]
        elif _is_checkpoint(name):
            checkpoint = _checkpoint(fs, inner, {"txn"})
            if "txn" in checkpoint.column_names:
                versions += [int(t["version"]) for t in checkpoint["txn"].to_pylist()
                             if t and t.get("appId") == app_id]
    return max(versions, default=None)


def last_checkpoint(table: str) -> int | None:
    """The version of the table's last checkpoint (from ``_last_checkpoint``), if any."""
    try:
        return int(json.loads(_text(f"{log_dir(table)}/_last_checkpoint"))["version"])
    except FileNotFoundError:
        return None

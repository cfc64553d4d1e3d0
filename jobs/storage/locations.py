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


#: The S3 file systems made so far, by bucket and the AWS settings they were made with.
_S3_SYSTEMS: dict[tuple, pa.fs.S3FileSystem] = {}


def filesystem(path: str) -> tuple[pa.fs.FileSystem, str]:
    """pyarrow's file system of a local path or URI, and the path within it. An ``s3://``
    bucket's is made once per process and AWS settings (:func:`s3_filesystem`)."""
    if path.startswith("s3://"):
        inner = path[len("s3://"):]
        return s3_filesystem(inner.split("/", 1)[0]), inner
    if is_remote(path):
        return pa.fs.FileSystem.from_uri(path)
    return pa.fs.LocalFileSystem(), local_path(path)


def s3_filesystem(bucket: str) -> pa.fs.S3FileSystem:
    """pyarrow's S3 file system of ``bucket`` with this process's AWS settings (as
    ``FileSystem.from_uri`` makes it: ``AWS_ENDPOINT_URL``, else the bucket's own region),
    opening output streams lazily: a file smaller than a multipart upload's part is written in
    one request (a PUT), not three (start, part, complete)."""
    from jobs.aws_settings import storage_options

    options = storage_options()
    made = _S3_SYSTEMS.get((bucket, *options.items()))
    if made is None:
        endpoint = options.get("AWS_ENDPOINT_URL")
        region = options.get("AWS_REGION") or (
            None if endpoint else pa.fs.resolve_s3_region(bucket))
        made = pa.fs.S3FileSystem(endpoint_override=endpoint, region=region,
                                  allow_delayed_open=True)
        _S3_SYSTEMS[(bucket, *options.items())] = made
    return made


def exists(path: str) -> bool:
    """Whether there is a file or directory at the local path or URI ``path``."""
    if not is_remote(path):
        return os.path.exists(local_path(path))  # (a commit checks two log entries: cheaper)
    fs, inner = filesystem(path)
    return fs.get_file_info(inner).type != pa.fs.FileType.NotFound


def file_exists(path: str) -> bool:
    """Whether there is a file at the local path or URI ``path`` (on an object store one
    request, where :func:`exists` asks twice of a missing object: it may be a directory)."""
    if not is_remote(path):
        return os.path.exists(local_path(path))
    fs, inner = filesystem(path)
    try:
        fs.open_input_file(inner).close()  # (a HEAD request)
    except FileNotFoundError:
        return False
    return True


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

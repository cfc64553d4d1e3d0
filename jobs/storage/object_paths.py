"""A run's own files (``run.json``, the run lock) on an object store: :class:`ObjectPath`, the few
operations of :class:`pathlib.Path` the run lifecycle uses, done through pyarrow's file system
on an ``s3://`` URI, and helpers that take either kind of path.

An object store has no rename and no directories: an object is written whole in one request
and appears atomically (readers see the old object or the new one, never a part), so a file
that is replaced locally by writing a temporary and renaming it is written directly here; a
"directory" is the common prefix of its objects and needs no making.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.fs

from jobs.storage.locations import filesystem


@dataclass(frozen=True)
class ObjectPath:
    """The object (or prefix) at ``uri`` (``s3://bucket/key``, no trailing slash). It has no
    ``__fspath__``: local file functions refuse it rather than write a local file."""

    uri: str

    def __truediv__(self, part: str) -> ObjectPath:
        return ObjectPath(f"{self.uri}/{part}")

    def __str__(self) -> str:
        return self.uri

    @property
    def name(self) -> str:
        return self.uri.rsplit("/", 1)[1]

    @property
    def parent(self) -> ObjectPath:
        return ObjectPath(self.uri.rsplit("/", 1)[0])

    def _info(self) -> pa.fs.FileInfo:
        fs, inner = filesystem(self.uri)
        return fs.get_file_info(inner)

    def exists(self) -> bool:
        return self._info().type != pa.fs.FileType.NotFound

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        """Nothing: an object store makes a prefix with its first object."""

    def read_text(self) -> str:
        """The object's text (an OSError naming it when it cannot be read)."""
        fs, inner = filesystem(self.uri)
        with fs.open_input_stream(inner) as stream:
            return stream.read().decode()

    def write_text(self, text: str) -> int:
        """Write the object whole (it appears atomically)."""
        fs, inner = filesystem(self.uri)
        data = text.encode()
        with fs.open_output_stream(inner) as stream:
            stream.write(data)
        return len(text)

    def stat(self) -> SimpleNamespace:
        """The object's ``st_mtime`` and ``st_size``."""
        info = self._info()
        if info.type == pa.fs.FileType.NotFound:
            raise FileNotFoundError(self.uri)
        return SimpleNamespace(st_mtime=info.mtime.timestamp() if info.mtime else 0.0,
                               st_size=info.size)

    def unlink(self, missing_ok: bool = False) -> None:
        fs, inner = filesystem(self.uri)
        try:
            fs.delete_file(inner)
        except FileNotFoundError:
            if not missing_ok:
                raise


#: A run's file: a local path, or an object on an object store.
AnyPath = Path | ObjectPath


def write_whole(path: AnyPath, text: str) -> None:
    """Replace the file ``path`` by ``text`` so that readers see the old text or the new one:
    locally a temporary file renamed into place; on an object store one write."""
    if isinstance(path, ObjectPath):
        path.write_text(text)
        return
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def remove_tree(path: AnyPath) -> None:
    """Delete the directory ``path`` (or every object under the prefix) with all it holds."""
    if isinstance(path, ObjectPath):
        fs, inner = filesystem(path.uri)
        fs.delete_dir(inner)  # (delete_dir_contents would leave a directory marker)
        return
    shutil.rmtree(path)


def delete_file(path: str) -> None:
    """Delete the file at the local path or URI ``path`` (none there: nothing)."""
    if "://" in path and not path.startswith("file://"):
        ObjectPath(path).unlink(missing_ok=True)
        return
    Path(path.removeprefix("file://")).unlink(missing_ok=True)

"""The benchmarks' scratch parent: private to this user, and a top of directory hierarchies
where the file system has that flag."""

from __future__ import annotations

import fcntl
import os
import struct
import tempfile

import pytest

from benchmarks.harness import _GET_FLAGS, _SET_FLAGS, _TOP_DIRECTORY, scratch_parent


@pytest.fixture
def temporary(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _flags(path) -> int:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return struct.unpack("i", fcntl.ioctl(fd, _GET_FLAGS, struct.pack("i", 0)))[0]
    finally:
        os.close(fd)


def _takes_the_flag(directory) -> bool:
    """Whether the file system of ``directory`` keeps the top-directory flag (ext4 does; tmpfs
    and overlay file systems may not)."""
    probe = directory / "probe"
    probe.mkdir()
    fd = os.open(probe, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.ioctl(fd, _SET_FLAGS, struct.pack("i", _flags(probe) | _TOP_DIRECTORY))
        return bool(_flags(probe) & _TOP_DIRECTORY)
    except OSError:
        return False
    finally:
        os.close(fd)


def test_the_scratch_parent_is_private_and_a_top_directory_where_flags_exist(temporary):
    parent = scratch_parent()
    assert parent.parent == temporary and parent.stat().st_uid == os.getuid()
    assert parent.stat().st_mode & 0o077 == 0
    if _takes_the_flag(temporary):
        assert _flags(parent) & _TOP_DIRECTORY
    assert scratch_parent() == parent  # made once, then reused


def test_a_scratch_parent_others_can_write_to_is_refused(temporary):
    parent = temporary / f"reprise-bench-{os.getuid()}"
    parent.mkdir()
    parent.chmod(0o777)
    with pytest.raises(SystemExit, match="no one else can write to"):
        scratch_parent()


def test_a_scratch_parent_that_is_a_link_is_refused(temporary):
    (temporary / "elsewhere").mkdir(mode=0o700)
    (temporary / f"reprise-bench-{os.getuid()}").symlink_to(temporary / "elsewhere")
    with pytest.raises(SystemExit, match="must be a directory of this user"):
        scratch_parent()

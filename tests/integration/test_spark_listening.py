"""The driver JVM of a local master listens on the loopback address only."""

from __future__ import annotations

import os
from pathlib import Path


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes


def _listening(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket the process listens on (IPv4 and IPv6)."""
    inodes, found = _socket_inodes(pid), []
    for table in ("tcp", "tcp6"):
        lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A: LISTEN
                address, port = local.split(":")
                found.append((address, int(port, 16)))
    return found


#: 127.0.0.1, ::1 and ::ffff:127.0.0.1 as /proc/net/tcp{,6} writes them
LOOPBACK = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}


def test_the_local_driver_and_block_manager_listen_on_loopback_only(spark):
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.ui.enabled") == "false"
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    sockets = _listening(pid)
    assert len(sockets) >= 2, sockets  # py4j gateway, driver RPC, block manager
    assert all(address in LOOPBACK for address, _ in sockets), sockets

"""The canonical byte format of a strongly typed query's state, one owner for every engine.

A state is its shape number (an unsigned varint) followed by each register as a typed value:
``u`` unit, ``T``/``F`` bools, ``i`` then a zigzag varint int, ``f`` then 8 little-endian bytes
of a double, ``s`` then a varint length and UTF-8 bytes, ``t`` then a varint length and the
tuple's items, ``x`` then a varint length and the UTF-8 reason of a ``Failure``. Equal states
give equal bytes. The compiled interpreter (``compiled.Automaton``) reads and writes it one value
at a time; the numba kernel (``kernel_states``) whole columns of states at once with the array
functions at the end of this module.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from ..expr.values import UNIT
from .errors import QREError
from .values import Failure

#: Width of an encoded float (its tag and 8 bytes) and the longest encoded int64.
FLOAT_WIDTH = 9
MAX_INT_WIDTH = 11
#: The encoding of the unit value.
UNIT_BYTES = b"u"


def write_varint(out: bytearray, n: int) -> None:
    """Append the unsigned varint of ``n`` (7 bits a byte, low bits first)."""
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it."""
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, pos


def pack(value: Any, out: bytearray) -> None:
    """Append a typed value (see the module docstring)."""
    if value is UNIT:
        out += UNIT_BYTES
    elif isinstance(value, bool):
        out += b"T" if value else b"F"
    elif isinstance(value, int):
        out += b"i"
        write_varint(out, 2 * value if value >= 0 else -2 * value - 1)
    elif isinstance(value, float):
        out += b"f" + struct.pack("<d", value)
    elif isinstance(value, str | Failure):
        data = (value if isinstance(value, str) else value.reason).encode()
        out += b"s" if isinstance(value, str) else b"x"
        write_varint(out, len(data))
        out += data
    elif isinstance(value, tuple):
        out += b"t"
        write_varint(out, len(value))
        for item in value:
            pack(item, out)
    else:
        raise QREError(f"cannot encode the value {value!r} of type {type(value).__name__} in a "
                       "state")


def unpack(data: bytes, pos: int) -> tuple[Any, int]:
    """The typed value at ``pos`` and the position after it."""
    tag = data[pos:pos + 1]
    pos += 1
    if tag in (b"u", b"T", b"F"):
        return {b"u": UNIT, b"T": True, b"F": False}[tag], pos
    if tag == b"f":
        return struct.unpack_from("<d", data, pos)[0], pos + 8
    n, pos = read_varint(data, pos)
    if tag == b"i":
        return (n >> 1) if not n & 1 else -((n + 1) >> 1), pos
    if tag == b"s":
        return data[pos:pos + n].decode(), pos + n
    if tag == b"x":
        return Failure(data[pos:pos + n].decode()), pos + n
    if tag != b"t":
        raise QREError(f"corrupt state: unknown value tag {tag!r}")
    items = []
    for _ in range(n):
        item, pos = unpack(data, pos)
        items.append(item)
    return tuple(items), pos


def encode_state(shape: int, registers: tuple[Any, ...]) -> bytes:
    """The bytes of a state: its shape number, then each register."""
    out = bytearray()
    write_varint(out, shape)
    for value in registers:
        pack(value, out)
    return bytes(out)


def decode_state(blob: bytes) -> tuple[int, tuple[Any, ...]]:
    """Inverse of :func:`encode_state`."""
    shape, pos = read_varint(blob, 0)
    registers = []
    while pos < len(blob):
        value, pos = unpack(blob, pos)
        registers.append(value)
    return shape, tuple(registers)


def tuple_header(length: int) -> bytes:
    """The bytes that open a tuple of ``length`` items."""
    out = bytearray(b"t")
    write_varint(out, length)
    return bytes(out)


# -- whole columns (numpy) --------------------------------------------------------------------


def encode_floats(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The encoding of each float64 of ``values``: a matrix with a row per value and how many
    bytes of each row are used (all of them)."""
    n = len(values)
    out = np.empty((n, FLOAT_WIDTH), np.uint8)
    out[:, 0] = ord("f")
    out[:, 1:] = values.astype("<f8").view(np.uint8).reshape(n, 8)
    return out, np.full(n, FLOAT_WIDTH)


def encode_bools(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The encoding of each truth value (an int, 0 for false) of ``values``."""
    return (np.where(values != 0, ord("T"), ord("F")).astype(np.uint8)[:, None],
            np.ones(len(values), np.int64))


def encode_ints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The encoding of each int64 of ``values``: a matrix with a row per value and how many
    bytes of each row are used."""
    n = len(values)
    zigzag = (values.view(np.uint64) << np.uint64(1)) ^ (values >> 63).view(np.uint64)
    groups = np.stack([zigzag >> np.uint64(7 * b) for b in range(10)], axis=1)
    more = np.zeros((n, 10), np.bool_)
    more[:, :9] = groups[:, 1:] != 0
    out = np.empty((n, MAX_INT_WIDTH), np.uint8)
    out[:, 0] = ord("i")
    out[:, 1:] = (groups & np.uint64(0x7F)) | (more.astype(np.uint64) << np.uint64(7))
    return out, 2 + more.sum(axis=1)


def read_varints(data: np.ndarray, at: np.ndarray, end: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The unsigned varint at each of ``at`` (:func:`read_varint`) if it ends before ``end`` and
    fits 64 bits: (value, position after it, whether it did)."""
    value = np.zeros(len(at), np.uint64)
    going = np.ones(len(at), np.bool_)
    fine = np.ones(len(at), np.bool_)
    length = np.zeros(len(at), np.int64)
    last = len(data) - 1
    for b in range(10):
        if not going.any():
            break
        byte = data[np.minimum(at + b, last)].astype(np.uint64)
        fine &= ~going | (at + b < end)
        if b == 9:
            fine &= ~going | (byte <= 1)
        value |= np.where(going, (byte & np.uint64(0x7F)) << np.uint64(7 * b), np.uint64(0))
        length += going
        going &= (byte & np.uint64(0x80)) != 0
    return value, at + length, fine & ~going



def _window(data: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """``data[a:a + width]`` for each of ``at`` (clipped to the data)."""
    return data[np.minimum(at[:, None] + np.arange(width), len(data) - 1)]


def read_floats(data: np.ndarray, at: np.ndarray, end: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The encoded float at each of ``at``: (whether one ends there before ``end``, its value,
    the position after it)."""
    window = _window(data, at, FLOAT_WIDTH)
    fits = (at + FLOAT_WIDTH <= end) & (window[:, 0] == ord("f"))
    return fits, np.ascontiguousarray(window[:, 1:]).view("<f8").ravel(), at + FLOAT_WIDTH


def read_bools(data: np.ndarray, at: np.ndarray, end: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The encoded bool at each of ``at`` as an int 0 or 1 (see :func:`read_floats`)."""
    byte = _window(data, at, 1)[:, 0]
    fits = (at + 1 <= end) & ((byte == ord("T")) | (byte == ord("F")))
    return fits, (byte == ord("T")).astype(np.int64), at + 1


def read_ints(data: np.ndarray, at: np.ndarray, end: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The encoded int64 at each of ``at`` (see :func:`read_floats`)."""
    tag = _window(data, at, 1)[:, 0]
    zigzag, after, fine = read_varints(data, at + 1, end)
    fits = (at + 1 <= end) & (tag == ord("i")) & fine
    return fits, _unzigzag(zigzag), after


def _unzigzag(zigzag: np.ndarray) -> np.ndarray:
    """The int64 values of zigzag-encoded uint64 ``zigzag``."""
    return ((zigzag >> np.uint64(1)) ^ (np.uint64(0) - (zigzag & np.uint64(1)))).view(np.int64)

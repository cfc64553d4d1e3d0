"""Kernel states as arrays, and their canonical bytes (``state_format``) for whole columns.

``KernelStates`` holds one row per key: the kernel state number and the int64 and float64
register slots. ``StateBytes`` converts such rows to and from the canonical encoding that the
compiled interpreter also uses, with array operations: each kernel state's encoding is a template
of literal bytes and register slots, matched against or filled from many keys at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..expr.values import UNIT
from .compiled import Automaton, CompiledState
from .kernel_values import INT_MIN, Kind
from .state_format import (
    UNIT_BYTES,
    encode_bools,
    encode_floats,
    encode_ints,
    read_bools,
    read_floats,
    read_ints,
    read_varints,
    tuple_header,
    write_varint,
)


@dataclass(frozen=True)
class KernelStates:
    """Per-key states: kernel state number, int64 and float64 register slots."""

    state: np.ndarray  # int32[K]
    ints: np.ndarray  # int64[K, slots]
    floats: np.ndarray  # float64[K, slots]

    @staticmethod
    def initial(keys: int, slots: tuple[int, int]) -> KernelStates:
        """``keys`` states before any item, with ``slots`` (int, float) register slots."""
        return KernelStates(np.zeros(keys, np.int32), np.zeros((keys, slots[0]), np.int64),
                            np.zeros((keys, slots[1]), np.float64))


@dataclass(frozen=True, eq=False)
class StateBytes:
    """The canonical bytes of the states of one kernel (its automaton, its (shape, register
    kinds) states and their numbers, and its register slots)."""

    automaton: Automaton
    states: tuple[tuple[int, tuple[Kind, ...]], ...]
    index: Mapping[tuple[int, tuple[Kind, ...]], int]
    slots: tuple[int, int]
    #: ``"last"``: the ids of the last :meth:`dumps`' blobs, sorted, and the row of each, the
    #: blobs (kept alive, so an id is theirs) and the states they decode to, set as one tuple:
    #: those blobs handed back to :meth:`load` are not decoded again.
    recent: dict[str, tuple[np.ndarray, np.ndarray, list[bytes], KernelStates]] = field(
        default_factory=dict, repr=False)

    def load(self, blobs: Sequence[bytes | None]) -> tuple[KernelStates, np.ndarray]:
        """States from canonical bytes (None: initial) and which of them the kernel can
        represent (a state with, say, a float where this kernel has an int is not). Blobs
        of the last ``dumps`` are taken from it; others are matched against each state's
        encoding with array operations; one that matches none is decoded on its own."""
        states = KernelStates.initial(len(blobs), self.slots)
        ok = np.ones(len(blobs), np.bool_)
        ids = np.fromiter(map(id, blobs), np.uint64, len(blobs))
        given = np.flatnonzero(ids != id(None))
        last = self.recent.get("last")
        if last is not None and len(given) and len(last[0]):
            known, rows, _, dumped = last
            at = np.minimum(np.searchsorted(known, ids[given]), len(known) - 1)
            found = known[at] == ids[given]
            hit, row = given[found], rows[at[found]]
            states.state[hit] = dumped.state[row]
            states.ints[hit], states.floats[hit] = dumped.ints[row], dumped.floats[row]
            given = given[~found]
        matched = self._match([blobs[k] for k in given.tolist()], given, states)
        for k in given[~matched].tolist():
            ok[k] = self._load_one(blobs[k], states, k)
        return states, ok

    def _load_one(self, blob: bytes, states: KernelStates, k: int) -> bool:
        """Decode ``blob`` into row ``k`` of ``states``; False if this kernel cannot hold it."""
        shape, registers = self.automaton.decode(blob)
        kinds = tuple(_kind_of(v) for v in registers)
        number = self.index.get((shape, kinds))
        if number is None:
            return False
        ints: list[int] = []
        floats: list[float] = []
        for value in registers:
            _flatten(value, ints, floats)
        states.state[k] = number
        states.ints[k, :len(ints)] = ints
        states.floats[k, :len(floats)] = floats
        return True

    @cached_property
    def _templates(self) -> list[list[_Token]]:
        """Per kernel state, its canonical encoding as literal bytes and register slots."""
        return [_template(shape, kinds) for shape, kinds in self.states]

    @cached_property
    def _by_shape(self) -> dict[int, list[int]]:
        """The kernel states of each shape."""
        found: dict[int, list[int]] = {}
        for number, (shape, _) in enumerate(self.states):
            found.setdefault(shape, []).append(number)
        return found

    def _match(self, chunks: list[bytes], given: np.ndarray, states: KernelStates
               ) -> np.ndarray:
        """Decode the blobs ``chunks`` (of the keys ``given``) that are exactly the encoding of
        a state of this kernel into ``states``; returns which were."""
        lengths = np.fromiter(map(len, chunks), np.int64, len(chunks))
        end = np.cumsum(lengths)
        start = end - lengths
        data = np.frombuffer(b"".join(chunks) + b"\0", np.uint8)
        shape, _, valid = read_varints(data, start, end)
        matched = np.zeros(len(chunks), np.bool_)
        candidates = np.flatnonzero(valid)
        for number_of_shape, where in _groups(shape[candidates]):
            rows = candidates[where]
            for number in self._by_shape.get(number_of_shape, []):
                fits, ints, floats = _decode(self._templates[number], data, start[rows],
                                             end[rows])
                keys = given[rows[fits]]
                states.state[keys] = number
                for slot, values in ints.items():
                    states.ints[keys, slot] = values[fits]
                for slot, values in floats.items():
                    states.floats[keys, slot] = values[fits]
                matched[rows[fits]] = True
                rows = rows[~fits]
        return matched

    def dumps(self, states: KernelStates) -> list[bytes]:
        """``dump`` of every key, with array operations: per kernel state, its keys' token
        encodings side by side, the bytes each row uses read out row by row."""
        blobs: list[bytes] = [b""] * len(states.state)
        for number, keys in _groups(states.state):
            encoded = [_encode(token, states, keys) for token in self._templates[number]]
            matrix = np.concatenate([m for m, _ in encoded], axis=1)
            inside = np.concatenate([used[:, None] > np.arange(m.shape[1])
                                     for m, used in encoded], axis=1)
            data = matrix[inside].tobytes()
            size = inside.sum(axis=1)
            end = np.cumsum(size)
            for k, a, b in zip(keys.tolist(), (end - size).tolist(), end.tolist(), strict=True):
                blobs[k] = data[a:b]
        ids = np.fromiter(map(id, blobs), np.uint64, len(blobs))
        rows = np.argsort(ids, kind="stable")
        self.recent["last"] = (ids[rows], rows, blobs, self._decoded(states))
        return blobs

    def _decoded(self, states: KernelStates) -> KernelStates:
        """``states`` as loading their bytes gives them: the register slots a state's encoding
        does not hold zero, a bool slot 0 or 1."""
        ints, floats, bools = self._slots_held
        number = states.state
        held = np.where(ints[number], states.ints, 0)
        return KernelStates(number.copy(), np.where(bools[number], held != 0, held),
                            np.where(floats[number], states.floats, 0.0))

    @cached_property
    def _slots_held(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per kernel state, the int slots and the float slots its encoding holds, and the int
        slots that hold a bool."""
        ints = np.zeros((len(self.states), self.slots[0]), np.bool_)
        floats = np.zeros((len(self.states), self.slots[1]), np.bool_)
        bools = np.zeros_like(ints)
        for number, tokens in enumerate(self._templates):
            for tag, slot in tokens:
                if tag == "f":
                    floats[number, slot] = True
                elif tag != "lit":
                    ints[number, slot] = True
                    bools[number, slot] = tag == "b"
        return ints, floats, bools

    def registers(self, states: KernelStates, k: int) -> tuple[Any, ...]:
        """The Python register values of key ``k`` (as the interpreter holds them)."""
        _, kinds = self.states[states.state[k]]
        ints, floats = iter(states.ints[k].tolist()), iter(states.floats[k].tolist())
        return tuple(build_value(kind, ints, floats) for kind in kinds)

    def dump(self, states: KernelStates, k: int) -> bytes:
        """The canonical bytes of key ``k``'s state (``compiled.Automaton.encode``)."""
        return self.automaton.encode(self.states[states.state[k]][0], self.registers(states, k))

    def interpreter_state(self, states: KernelStates, k: int) -> CompiledState:
        """Key ``k``'s state for the compiled interpreter."""
        shape = self.automaton.shapes[self.states[states.state[k]][0]]
        return CompiledState(self.automaton.machine, shape, self.registers(states, k))


def _kind_of(value: Any) -> Kind | None:
    """The kernel kind of a Python value, or None if no kernel slot holds it."""
    if value is UNIT:
        return "u"
    if isinstance(value, bool):
        return "b"
    if isinstance(value, int):
        return "i" if INT_MIN <= value < 2**63 else None
    if isinstance(value, float):
        return "f"
    if isinstance(value, tuple):
        kinds = tuple(_kind_of(v) for v in value)
        return None if any(k is None for k in kinds) else kinds
    return None


def _flatten(value: Any, ints: list[int], floats: list[float]) -> None:
    if isinstance(value, tuple):
        for item in value:
            _flatten(item, ints, floats)
    elif isinstance(value, float):
        floats.append(value)
    elif value is not UNIT:
        ints.append(int(value))


def build_value(kind: Kind, ints: Iterator[int], floats: Iterator[float]) -> Any:
    if kind == "u":
        return UNIT
    if kind == "i":
        return int(next(ints))
    if kind == "b":
        return bool(next(ints))
    if kind == "f":
        return float(next(floats))
    return tuple(build_value(k, ints, floats) for k in kind)


_Token = tuple[str, Any]  # ("lit", bytes) | ("i" | "b" | "f", register slot)

def _groups(values: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Each distinct value of the int array ``values`` and the positions that hold it."""
    if not len(values):
        return []
    order = np.argsort(values, kind="stable")
    return [(int(values[part[0]]), part)
            for part in np.split(order, np.flatnonzero(np.diff(values[order])) + 1)]


def _template(shape: int, kinds: Sequence[Kind]) -> list[_Token]:
    """``Automaton.encode`` of a state of ``shape`` with registers of ``kinds``: literal bytes
    (shape number, tags, tuple lengths, units) and the register slots in between."""
    tokens: list[_Token] = []
    literal = bytearray()
    write_varint(literal, shape)
    used = [0, 0]

    def walk(kind: Kind) -> None:
        if isinstance(kind, tuple):
            literal.extend(tuple_header(len(kind)))
            for part in kind:
                walk(part)
        elif kind == "u":
            literal.extend(UNIT_BYTES)
        else:
            if literal:
                tokens.append(("lit", bytes(literal)))
                literal.clear()
            which = int(kind == "f")
            tokens.append((kind, used[which]))
            used[which] += 1

    for kind in kinds:
        walk(kind)
    if literal:
        tokens.append(("lit", bytes(literal)))
    return tokens


def _encode(token: _Token, states: KernelStates, keys: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of ``token`` in the states ``keys``: a matrix with a row per key, and how many
    bytes of each row are used."""
    tag, arg = token
    if tag == "lit":
        row = np.frombuffer(arg, np.uint8)
        return np.broadcast_to(row, (len(keys), len(row))), np.full(len(keys), len(row))
    if tag == "f":
        return encode_floats(states.floats[keys, arg])
    if tag == "b":
        return encode_bools(states.ints[keys, arg])
    return encode_ints(states.ints[keys, arg])


def _decode(tokens: list[_Token], data: np.ndarray, start: np.ndarray, end: np.ndarray
            ) -> tuple[np.ndarray, dict[int, np.ndarray], dict[int, np.ndarray]]:
    """Which of the blobs ``data[start:end]`` are exactly the encoding ``tokens``, and their
    int and float register slots."""
    fits = np.ones(len(start), np.bool_)
    at = start.copy()
    ints: dict[int, np.ndarray] = {}
    floats: dict[int, np.ndarray] = {}
    for tag, arg in tokens:
        if tag == "lit":
            literal = np.frombuffer(arg, np.uint8)
            window = data[np.minimum(at[:, None] + np.arange(len(arg)), len(data) - 1)]
            fits &= (at + len(arg) <= end) & (window == literal).all(axis=1)
            after = at + len(arg)
        else:
            read = {"f": read_floats, "b": read_bools, "i": read_ints}[tag]
            ok, values, after = read(data, at, end)
            fits &= ok
            (floats if tag == "f" else ints)[arg] = values
        at = np.where(fits, after, start)
    return fits & (at == end), ints, floats

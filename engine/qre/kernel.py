"""A numba kernel for strongly typed queries over numeric columns.

``kernel_for(query, kinds)`` takes the query's whole automaton (``compiled.explore``), walks it
together with the types of the registers (a shape reached with an int and with a float register
is two kernel states), flattens every register into int64 / float64 slots (bools in int slots,
tuples flattened, units dropped), generates the predicates, the register updates of every
transition and the output of every state as the Python source of one ``numba.njit`` function,
and compiles it (memoised per query text and field kinds; cached on disk by numba in the
directory of ``kernel_cache.configure_cache``). ``Kernel.run`` then evaluates whole per-key runs
in one call over key-sorted columns. The code generation lives in ``kernel_values`` and
``kernel_source``, the state arrays and their bytes in ``kernel_states``.

Every operation reproduces Python's result exactly. A step the kernel cannot reproduce (an int64
overflow, a division by zero, an int too large for an exact float conversion, a predicate
combination the analysis found impossible) stops that key's run and is reported in
``KernelRun.failed``: the caller re-runs that key with the interpreter, which gives Python's
answer (or error). States use the canonical encoding of ``compiled.Automaton``, so the kernel
and the interpreter continue each other's states.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from .compiled import Automaton, CompiledState, explore
from .kernel_cache import load_kernel_function
from .kernel_source import Generated, generate
from .kernel_states import KernelStates, StateBytes, build_value
from .kernel_values import INT_MIN, KIND_NAMES
from .terms import Term, check_item
from .text import parse
from .values import AMBIGUOUS, NONE, Outcome

MODES = {"every": 0, "changes": 1, "final": 2}
FIELD_KINDS = {"int": "i", "float": "f", "bool": "b"}
_DTYPES = {"i": np.int64, "f": np.float64, "b": np.bool_}


@dataclass(frozen=True)
class KernelRun:
    """What ``Kernel.run`` returns. Per-item arrays are empty in mode ``final``; rows of keys
    whose run failed are meaningless."""

    kind: np.ndarray  # int8[N]: 0 none, 1 value, 2 ambiguous (the output after each item)
    same: np.ndarray  # bool[N]: a value equal (same JSON) to the previous value of its key
    otype: np.ndarray  # int32[N]: output type number when kind is 1
    ints: np.ndarray  # int64[N, slots]: int and bool leaves of the output
    floats: np.ndarray  # float64[N, slots]: float leaves of the output
    states: KernelStates  # the state of every key after its run
    failed: np.ndarray  # int64[K]: the item where a key's run stopped (-1: it did not)


@dataclass(frozen=True, eq=False, repr=False)
class Kernel:
    """A compiled query for fixed field kinds (see the module docstring)."""

    automaton: Automaton
    fields: tuple[str, ...]
    kinds: tuple[str, ...]  # per field: "i", "f" or "b"
    generated: Generated  # states, slots, tables and source of the kernel
    fn: Any

    def __repr__(self) -> str:
        fields = ", ".join(f"{f}: {KIND_NAMES[k]}" for f, k in zip(self.fields, self.kinds,
                                                                strict=True))
        g = self.generated
        return (f"Kernel({fields}; {len(self.automaton.shapes)} shapes, {len(g.states)} "
                f"states, register slots {g.slots})")

    def initial(self, keys: int) -> KernelStates:
        """``keys`` states before any item."""
        return KernelStates.initial(keys, self.generated.slots)

    @cached_property
    def state_bytes(self) -> StateBytes:
        """The conversion of this kernel's states to and from canonical bytes."""
        g = self.generated
        return StateBytes(self.automaton, g.states, g.index, g.slots)

    def load(self, blobs: Sequence[bytes | None]) -> tuple[KernelStates, np.ndarray]:
        """States from canonical bytes (None: initial) and which of them the kernel can
        represent (a state with, say, a float where this kernel has an int is not)."""
        return self.state_bytes.load(blobs)

    def dumps(self, states: KernelStates) -> list[bytes]:
        """``dump`` of every key, with array operations."""
        return self.state_bytes.dumps(states)

    def registers(self, states: KernelStates, k: int) -> tuple[Any, ...]:
        """The Python register values of key ``k`` (as the interpreter holds them)."""
        return self.state_bytes.registers(states, k)

    def dump(self, states: KernelStates, k: int) -> bytes:
        """The canonical bytes of key ``k``'s state (``compiled.Automaton.encode``)."""
        return self.state_bytes.dump(states, k)

    def interpreter_state(self, states: KernelStates, k: int) -> CompiledState:
        """Key ``k``'s state for the compiled interpreter."""
        return self.state_bytes.interpreter_state(states, k)

    def outcome(self, result: KernelRun, i: int) -> Outcome:
        """The output after item ``i`` (modes every and changes)."""
        kind = result.kind[i]
        if kind != 1:
            return AMBIGUOUS if kind == 2 else NONE
        ints, floats = iter(result.ints[i].tolist()), iter(result.floats[i].tolist())
        out_kind = self.generated.out_kinds[result.otype[i]]
        return Outcome("value", build_value(out_kind, ints, floats))

    def run(self, columns: Mapping[str, np.ndarray], bounds: np.ndarray, states: KernelStates,
            mode: str = "every") -> KernelRun:
        """Run key ``k`` over items ``bounds[k]:bounds[k + 1]`` of ``columns`` (the fields the
        query reads, sorted by key) from ``states`` row ``k``."""
        bounds = np.ascontiguousarray(bounds, dtype=np.int64)
        self._check(bounds, states)
        n = int(bounds[-1])
        cols = [self._column(columns, name, kind, n) for name, kind in zip(
            self.fields, self.kinds, strict=True)]
        per_item = 0 if mode == "final" else n
        final = KernelStates(np.empty(len(bounds) - 1, np.int32), states.ints.copy(),
                             states.floats.copy())
        result = KernelRun(np.zeros(per_item, np.int8), np.zeros(per_item, np.bool_),
                           np.full(per_item, -1, np.int32),
                           np.zeros((per_item, self.generated.out_slots[0]), np.int64),
                           np.zeros((per_item, self.generated.out_slots[1]), np.float64),
                           final, np.empty(len(bounds) - 1, np.int64))
        self.fn(*cols, bounds, *self.generated.tables, np.ascontiguousarray(states.state, np.int32),
                final.ints, final.floats, MODES[mode], result.kind, result.same, result.otype,
                result.ints, result.floats, final.state, result.failed)
        return result

    def _check(self, bounds: np.ndarray, states: KernelStates) -> None:
        """Reject inputs that would make the kernel (which has no bounds checks) read or write
        outside its arrays."""
        keys, g = len(bounds) - 1, self.generated
        if keys < 0 or bounds[0] != 0 or (np.diff(bounds) < 0).any():
            raise ValueError("bounds must start at 0 and never decrease")
        if (len(states.state) != keys or states.ints.shape != (keys, g.slots[0])
                or states.floats.shape != (keys, g.slots[1])):
            raise ValueError(f"states must hold {keys} rows of this kernel's register slots")
        if keys and not (states.state.min() >= 0 and states.state.max() < len(g.states)):
            raise ValueError("states hold a state number this kernel does not have")

    @staticmethod
    def _column(columns: Mapping[str, np.ndarray], name: str, kind: str, n: int) -> np.ndarray:
        col = np.asarray(columns[name])
        expected = {"i": np.integer, "f": np.floating, "b": np.bool_}[kind]
        if (not np.issubdtype(col.dtype, expected) or len(col) < n
                or not np.can_cast(col.dtype, _DTYPES[kind])):
            raise ValueError(f"column {name!r} must hold at least {n} values of kind "
                             f"{KIND_NAMES[kind]}, got {len(col)} of dtype {col.dtype}")
        return np.ascontiguousarray(col, dtype=_DTYPES[kind])

    def evaluate(self, items: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        """Outputs on every prefix of one stream of items (empty prefix first), like
        ``engine.qre.evaluate``; a step the kernel cannot reproduce raises ``ValueError``."""
        for item in items:
            check_item(self.automaton.machine.query, item)
        columns = {f: np.array([item[f] for item in items], dtype=_DTYPES[kind])
                   for f, kind in zip(self.fields, self.kinds, strict=True)}
        result = self.run(columns, np.array([0, len(items)]), self.initial(1))
        if result.failed[0] >= 0:
            raise ValueError(f"item {result.failed[0]} needs the interpreter")
        return [self.automaton.start().output(), *(self.outcome(result, i)
                                                   for i in range(len(items)))]



def column_kind(values: Sequence[Any]) -> str | None:
    """The kernel kind of a field holding ``values`` ("i", "f" or "b"), or None if they are
    mixed or not numbers (the interpreter must run them)."""
    types = {type(v) for v in values}
    if len(types) != 1:
        return None if types else "i"
    (kind,) = types
    if kind is int:
        return "i" if all(INT_MIN <= v < 2**63 for v in values) else None
    return {float: "f", bool: "b"}.get(kind)


_KERNELS: dict[tuple[str, tuple[tuple[str, str], ...]], Kernel | str] = {}


def compile_kernel(query: Term | str, kinds: Mapping[str, str] | None = None) -> Kernel | str:
    """The kernel of ``query`` for field ``kinds`` ("int", "float" or "bool" per field read;
    "int" when not given), or why there is none. Memoised per query text and kinds."""
    term = parse(query) if isinstance(query, str) else query
    fields = tuple(sorted(term.fields))
    given = dict(kinds or {})
    wanted = tuple((f, FIELD_KINDS.get(given.get(f, "int"), given.get(f, "int")))
                   for f in fields)
    key = (str(term), wanted)
    if key not in _KERNELS:
        _KERNELS[key] = _compile(term, fields, tuple(k for _, k in wanted))
    return _KERNELS[key]


def _compile(term: Term, fields: tuple[str, ...], kinds: tuple[str, ...]) -> Kernel | str:
    automaton = explore(term)
    if isinstance(automaton, str):
        return automaton
    bad = [f for f, k in zip(fields, kinds, strict=True) if k not in _DTYPES]
    if bad:
        return f"field {bad[0]!r} is not a number or bool"
    generated = generate(automaton, fields, kinds)
    if isinstance(generated, str):
        return generated
    return Kernel(automaton, fields, kinds, generated, load_kernel_function(generated.source))


def kernel_for(query: Term | str, kinds: Mapping[str, str] | None = None) -> Kernel | None:
    """The kernel of ``query`` (see ``compile_kernel``), or None."""
    result = compile_kernel(query, kinds)
    return result if isinstance(result, Kernel) else None


def kernel_reason(query: Term | str, kinds: Mapping[str, str] | None = None) -> str | None:
    """Why ``query`` has no kernel, or None if it has one."""
    result = compile_kernel(query, kinds)
    return result if isinstance(result, str) else None

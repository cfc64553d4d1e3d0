"""Compiled fast path for strongly typed queries: hierarchical derivatives memoised into an
automaton with registers.

Which hierarchical state follows from which depends only on the truth values of the query's
predicates on the item, not on the data values. So the derivative is computed once per (shape,
predicate vector) on a *symbolic* state whose values are registers, and recorded as a
transition: the next shape and a register-update program (expressions over the old registers
and the item). Running a stream then costs one predicate vector, one table lookup and the
update of a few registers per item. Shapes have deterministic structural keys, so a state
pickles as (query, shape key, registers) and is rebuilt on load.

``explore`` builds the whole automaton (finite for strongly typed queries) and numbers its shapes
canonically; ``Automaton.dump`` / ``load`` then encode a state compactly and canonically as its
shape number and typed register values (``state_format``; equal states give equal bytes). The
numba kernel uses the same format, so either engine can continue the other's state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import QREError, QRETypeError
from .hierarchical import (
    HApply,
    HAtom,
    HBinary,
    HCombine,
    HEps,
    HIter,
    HNode,
    HSplit,
    QSet,
    derive,
    to_qset,
)
from .minterms import TooComplex, minterms
from .ops import Op, Pred
from .state_format import decode_state, encode_state
from .strong import strongly_typed
from .terms import Term, check_item
from .values import Outcome

Sym = tuple[Any, ...]  # ("const", v) | ("reg", i) | ("item", op) | ("call", op, args)
Code = Callable[[list[Any], Any], Any]
_KINDS: dict[str, type[HBinary]] = {"split": HSplit, "iter": HIter, "combine": HCombine}


class _SymItem:
    """The item as seen by a symbolic step: only its predicate vector is known."""

    def __init__(self, truth: tuple[bool, ...]):
        self.truth = truth


@dataclass(frozen=True)
class _SymPred:
    index: int

    def __call__(self, item: _SymItem) -> bool:
        return item.truth[self.index]


@dataclass(frozen=True)
class _SymOp:
    """An operation applied symbolically: builds expressions instead of values."""

    base: Op
    bound: tuple[Sym, ...] = ()

    def __call__(self, *args: Any) -> Sym:
        if len(args) == 1 and isinstance(args[0], _SymItem):
            return ("item", self.base)
        return ("call", self.base, (*self.bound, *args))

    def partial(self, value: Sym) -> _SymOp:
        return _SymOp(self.base, (*self.bound, value))


def _compile(expr: Sym) -> Code:
    tag = expr[0]
    if tag == "reg":
        index = expr[1]
        return lambda regs, item: regs[index]
    if tag == "const":
        value = expr[1]
        return lambda regs, item: value
    if tag == "item":
        op = expr[1]
        return lambda regs, item: op(item)
    op, args = expr[1], [_compile(a) for a in expr[2]]
    if len(args) == 1:
        (first,) = args
        return lambda regs, item: op(first(regs, item))
    if len(args) == 2:
        left, right = args
        return lambda regs, item: op(left(regs, item), right(regs, item))
    return lambda regs, item: op(*(a(regs, item) for a in args))


@dataclass
class Shape:
    """A state of the automaton without its values: a symbolic q-set whose values are registers,
    its output code and the transitions found so far."""

    key: Any
    qset: QSet
    outs: list[Code]
    out_syms: list[Sym]
    transitions: dict[tuple[bool, ...], tuple[Shape, list[Code]]] = field(default_factory=dict)
    #: The register-update program of each transition, as symbolic expressions.
    programs: dict[tuple[bool, ...], list[Sym]] = field(default_factory=dict)


class Machine:
    """The lazily built automaton of one query."""

    def __init__(self, query: Term):
        self.query = query
        self.preds: list[Pred] = []
        self.ops: list[Op] = []
        self.static: list[QSet] = []
        self._op_index: dict[int, int] = {}
        self._static_index: dict[int, int] = {}
        root = self._symbolic(to_qset(query))
        self.shapes: dict[Any, Shape] = {}
        self.start = self.shape_of(("static", self._static_index[id(root)]), root)

    def _symbolic(self, qset: QSet) -> QSet:
        """Copy the static q-set with symbolic predicates, operations and constants."""
        out = tuple(self._symbolic_node(node) for node in qset)
        self._static_index[id(out)] = len(self.static)
        self.static.append(out)
        return out

    def _symbolic_node(self, node: HNode) -> HNode:
        if isinstance(node, HEps):
            return HEps(("const", node.outs[0]))
        if isinstance(node, HAtom):
            keys = [p.key for p in self.preds]
            if node.pred.key not in keys:
                self.preds.append(node.pred)
                keys.append(node.pred.key)
            return HAtom(_SymPred(keys.index(node.pred.key)), self._sym_op(node.op))  # type: ignore[arg-type]
        if isinstance(node, HApply):
            return HApply(self._symbolic(node.sub), self._sym_op(node.op))  # type: ignore[arg-type]
        assert isinstance(node, HBinary)
        left, right = self._symbolic(node.left), self._symbolic(node.right)
        return type(node)(left, right, self._sym_op(node.op))  # type: ignore[arg-type]

    def _sym_op(self, op: Op) -> _SymOp:
        if id(op) not in self._op_index:
            self._op_index[id(op)] = len(self.ops)
            self.ops.append(op)
        return _SymOp(op)

    def shape_of(self, key: Any, qset: QSet) -> Shape:
        """The shape of structural key ``key`` (whose symbolic q-set is ``qset``), built once."""
        shape = self.shapes.get(key)
        if shape is None:
            out_syms = [v for node in qset for v in node.outs]
            shape = self.shapes[key] = Shape(key, qset, [_compile(v) for v in out_syms],
                                             out_syms)
        return shape

    def transition(self, shape: Shape, truth: tuple[bool, ...]) -> tuple[Shape, list[Code]]:
        """The next shape and register program on an item with predicate vector ``truth``."""
        known = shape.transitions.get(truth)
        if known is None:
            derived = derive(shape.qset, _SymItem(truth), {})
            program: list[Sym] = []
            key = self._canon_set(derived, program)
            canonical = self.decode(key)
            known = shape.transitions[truth] = (self.shape_of(key, canonical),
                                                [_compile(e) for e in program])
            shape.programs[truth] = program
        return known

    def _canon_set(self, qset: QSet, program: list[Sym]) -> Any:
        if id(qset) in self._static_index:
            return ("static", self._static_index[id(qset)])
        return ("set", *(self._canon(node, program) for node in qset))

    def _canon(self, node: HNode, program: list[Sym]) -> Any:
        if isinstance(node, HEps):
            program.append(node.outs[0])
            return ("eps",)
        if isinstance(node, HApply):
            op: _SymOp = node.op  # type: ignore[assignment]
            program.extend(op.bound)
            return ("apply", self._op_index[id(op.base)], len(op.bound),
                    self._canon_set(node.sub, program))
        assert isinstance(node, HBinary) and not isinstance(node, HAtom)
        kind = next(k for k, v in _KINDS.items() if type(node) is v)
        return (kind, self._op_index[id(node.op.base)],  # type: ignore[attr-defined]
                self._canon_set(node.left, program), self._canon_set(node.right, program))

    def decode(self, key: Any) -> QSet:
        """The symbolic q-set of a shape key, its values being registers in key order."""
        counter = iter(range(1 << 30))
        return self._decode_set(key, counter)

    def _decode_set(self, key: Any, counter: Any) -> QSet:
        if key[0] == "static":
            return self.static[key[1]]
        return tuple(self._decode(k, counter) for k in key[1:])

    def _decode(self, key: Any, counter: Any) -> HNode:
        if key[0] == "eps":
            return HEps(("reg", next(counter)))
        if key[0] == "apply":
            bound = tuple(("reg", next(counter)) for _ in range(key[2]))
            return HApply(self._decode_set(key[3], counter), _SymOp(self.ops[key[1]], bound))  # type: ignore[arg-type]
        left = self._decode_set(key[2], counter)
        right = self._decode_set(key[3], counter)
        return _KINDS[key[0]](left, right, _SymOp(self.ops[key[1]]))  # type: ignore[arg-type]


@dataclass(frozen=True)
class CompiledState:
    """Evaluator state: the machine (shared, not pickled), the current shape and registers."""

    machine: Machine
    shape: Shape
    registers: tuple[Any, ...]

    def step(self, item: Any) -> CompiledState:
        """The state after reading ``item``."""
        machine = self.machine
        check_item(machine.query, item)
        truth = tuple(bool(p(item)) for p in machine.preds)
        shape, program = machine.transition(self.shape, truth)
        regs = list(self.registers)
        return CompiledState(machine, shape, tuple(code(regs, item) for code in program))

    def output(self) -> Outcome:
        """The output on the prefix read so far."""
        regs = list(self.registers)
        return Outcome.of([code(regs, None) for code in self.shape.outs])

    def size(self) -> int:
        """Number of registers (the data part of the state)."""
        return len(self.registers)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (self.machine.query, self.shape.key, self.registers))


def _restore(query: Term, key: Any, registers: tuple[Any, ...]) -> CompiledState:
    machine = Machine(query)
    return CompiledState(machine, machine.shape_of(key, machine.decode(key)), registers)


class CompiledEvaluator:
    """Automaton-with-registers engine for strongly typed queries (built lazily, per query)."""

    def start(self, query: Term) -> CompiledState:
        ok, reason = strongly_typed(query)
        if not ok:
            raise QRETypeError(f"the compiled engine needs a strongly typed query: {reason}")
        machine = Machine(query)
        return CompiledState(machine, machine.start, ())


MAX_PREDICATES = 16
MAX_SHAPES = 4096


@dataclass
class Automaton:
    """Every reachable shape of a strongly typed query, numbered breadth first from the start
    with the satisfiable predicate vectors (``symbols``, minterm order) as the alphabet."""

    machine: Machine
    symbols: list[tuple[bool, ...]]
    shapes: list[Shape]
    index: dict[Any, int]

    def step(self, shape: int, symbol: int) -> tuple[int, list[Sym]]:
        """The next shape number and the symbolic register program of a transition."""
        truth = self.symbols[symbol]
        nxt, _ = self.machine.transition(self.shapes[shape], truth)
        return self.index[nxt.key], self.shapes[shape].programs[truth]

    def start(self) -> CompiledState:
        """The state before any item."""
        return CompiledState(self.machine, self.shapes[0], ())

    def encode(self, shape: int, registers: tuple[Any, ...]) -> bytes:
        """Canonical bytes of a state: the shape number, then each register as a typed value."""
        return encode_state(shape, registers)

    def decode(self, blob: bytes) -> tuple[int, tuple[Any, ...]]:
        """Inverse of ``encode``."""
        return decode_state(blob)

    def dump(self, state: CompiledState) -> bytes:
        """Canonical bytes of an interpreter state."""
        shape = self.index.get(state.shape.key)
        if shape is None:
            raise QREError("the state left the explored automaton: an item satisfied a "
                           "combination of predicates that the analysis found impossible")
        return self.encode(shape, state.registers)

    def load(self, blob: bytes) -> CompiledState:
        """The interpreter state of canonical bytes."""
        shape, registers = self.decode(blob)
        return CompiledState(self.machine, self.shapes[shape], registers)


_AUTOMATA: dict[str, Automaton | str] = {}


def explore(query: Term) -> Automaton | str:
    """The whole automaton of ``query`` (memoised per query text), or why it cannot be built."""
    text = str(query)
    if text not in _AUTOMATA:
        _AUTOMATA[text] = _explore(query)
    return _AUTOMATA[text]


def _explore(query: Term) -> Automaton | str:
    ok, reason = strongly_typed(query)
    if not ok:
        return f"the query is not strongly typed: {reason}"
    machine = Machine(query)
    if len(machine.preds) > MAX_PREDICATES:
        return f"the query has {len(machine.preds)} predicates (at most {MAX_PREDICATES})"
    try:
        combos = minterms(machine.preds)
    except TooComplex as err:
        return f"cannot analyse the predicates: {err}"
    symbols = [tuple(p.key in combo for p in machine.preds) for combo in combos]
    shapes, index = [machine.start], {machine.start.key: 0}
    for shape in shapes:  # grows while it is walked: breadth first
        for truth in symbols:
            nxt, _ = machine.transition(shape, truth)
            if nxt.key not in index:
                if len(shapes) == MAX_SHAPES:
                    return f"the automaton has more than {MAX_SHAPES} shapes"
                index[nxt.key] = len(shapes)
                shapes.append(nxt)
    return Automaton(machine, symbols, shapes, index)

"""Generated source of the numba kernel: register slots, the walk of (shape, register kinds)
states, and the one ``njit`` function that runs whole per-key runs (see ``kernel.Kernel.run``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .compiled import Automaton
from .kernel_values import Block, Kind, Refused, Val, leaf_kinds

MAX_STATES = 4096
MAX_SLOTS = 256
_NUMBA_TYPES = {"i": "int64[::1]", "f": "float64[::1]", "b": "boolean[::1]"}


def _slots(kinds: Sequence[Kind]) -> list[str]:
    """Where each leaf of registers of ``kinds`` lives: ``ri[k, j]`` or ``rf[k, j]``."""
    refs, n_int, n_float = [], 0, 0
    for leaf in (x for kind in kinds for x in leaf_kinds(kind)):
        if leaf == "f":
            refs.append(f"rf[k, {n_float}]")
            n_float += 1
        else:
            refs.append(f"ri[k, {n_int}]")
            n_int += 1
    return refs


def _load(block: Block, kinds: Sequence[Kind]) -> list[Val]:
    """Read registers of ``kinds`` into temporaries (before any register is written)."""
    refs = iter(_slots(kinds))
    values = []
    for kind in kinds:
        leaves = []
        for _ in leaf_kinds(kind):
            ref = next(refs)
            leaves.append(block.let(ref))
            block.loads[leaves[-1]] = ref
        values.append(Val(kind, tuple(leaves)))
    return values


def _store(block: Block, values: Sequence[Val]) -> None:
    """Write ``values`` as the next registers, skipping slots that keep their loaded value."""
    refs = _slots([v.kind for v in values])
    leaves = [x for v in values for x in v.leaves]
    block.lines += [f"{ref} = {x}" for ref, x in zip(refs, leaves, strict=True)
                    if block.loads.get(x) != ref]


def _counts(kind_lists: Sequence[Sequence[Kind]]) -> tuple[int, int]:
    """The most int-like and float leaves any of ``kind_lists`` needs."""
    leaves = [[x for k in kinds for x in leaf_kinds(k)] for kinds in kind_lists]
    return (max((sum(x != "f" for x in ls) for ls in leaves), default=0),
            max((sum(x == "f" for x in ls) for ls in leaves), default=0))


class _Explorer:
    """Walks (shape, register kinds) pairs breadth first, generating every block once."""

    def __init__(self, automaton: Automaton, fields: Mapping[str, Val]):
        self.auto = automaton
        self.fields = fields
        self.states: list[tuple[int, tuple[Kind, ...]]] = [(0, ())]
        self.index = {self.states[0]: 0}
        self.programs: dict[str, int] = {}
        self.outputs: dict[str, int] = {}
        self.out_kinds: dict[Kind, int] = {}
        self.nxt: list[list[int]] = []
        self.prog: list[list[int]] = []
        self.outp: list[int] = []

    def run(self) -> None:
        for shape, kinds in self.states:  # grows while it is walked
            row_next, row_prog = [], []
            for symbol in range(len(self.auto.symbols)):
                target, program = self.auto.step(shape, symbol)
                block = Block(self.fields)
                regs = _load(block, kinds)
                values = [block.sym(expr, regs) for expr in program]
                _store(block, values)
                row_next.append(self._state(target, tuple(v.kind for v in values)))
                row_prog.append(self.programs.setdefault("\n".join(block.lines),
                                                         len(self.programs)))
            self.nxt.append(row_next)
            self.prog.append(row_prog)
            self.outp.append(self._output(shape, kinds))

    def _state(self, shape: int, kinds: tuple[Kind, ...]) -> int:
        key = (shape, kinds)
        if key not in self.index:
            if len(self.states) == MAX_STATES:
                raise Refused(f"more than {MAX_STATES} (shape, register type) states")
            if sum(_counts([kinds])) > MAX_SLOTS:
                raise Refused(f"a state needs more than {MAX_SLOTS} register slots")
            self.index[key] = len(self.states)
            self.states.append(key)
        return self.index[key]

    def _output(self, shape: int, kinds: tuple[Kind, ...]) -> int:
        block = Block(self.fields)
        regs = _load(block, kinds)
        values = [block.sym(expr, regs) for expr in self.auto.shapes[shape].out_syms]
        if len(values) == 1:
            (value,) = values
            kind_id = self.out_kinds.setdefault(value.kind, len(self.out_kinds))
            n_int = n_float = 0
            for leaf, x in zip(leaf_kinds(value.kind), value.leaves, strict=True):
                block.lines.append(f"O_f{n_float} = {x}" if leaf == "f" else f"O_i{n_int} = {x}")
                n_float, n_int = n_float + (leaf == "f"), n_int + (leaf != "f")
            block.lines += ["kd = 1", f"ot = {kind_id}"]
        elif values:
            block.lines.append("kd = 2")
        return self.outputs.setdefault("\n".join(block.lines), len(self.outputs))


def _dispatch(var: str, blocks: list[list[str]]) -> list[str]:
    """A balanced if-tree running ``blocks[var]``."""

    def tree(lo: int, hi: int) -> list[str]:
        if hi - lo == 1:
            return blocks[lo] or ["pass"]
        mid = (lo + hi) // 2
        return [f"if {var} < {mid}:", *_indent(tree(lo, mid), 1), "else:",
                *_indent(tree(mid, hi), 1)]

    return tree(0, len(blocks))


_SIGNATURE = ("bounds, symtab, nxt, prog, outp, start, ri, rf, mode, kind, same, otype, oi, "
              "of, fstate, failed")
_TYPES = ("int64[::1], int32[::1], int32[:, ::1], int32[:, ::1], int32[::1], int32[::1], "
          "int64[:, ::1], float64[:, ::1], int64, int8[::1], boolean[::1], int32[::1], "
          "int64[:, ::1], float64[:, ::1], int32[::1], int64[::1]")


def _float_equal(a: str, b: str) -> str:
    """Same ``repr`` (so same JSON): equal with the same sign, or both NaN."""
    return (f"(({a} == {b} and ({a} != 0.0 or math.copysign(1.0, {a}) == "
            f"math.copysign(1.0, {b}))) or ({a} != {a} and {b} != {b}))")


def _source(kinds: Sequence[str], preds: Block, truths: list[str], explorer: _Explorer,
            n_out: tuple[int, int]) -> str:
    """The kernel module: one njit function over key runs (see ``Kernel.run``)."""
    outs = [f"O_i{j}" for j in range(n_out[0])] + [f"O_f{j}" for j in range(n_out[1])]
    code = " + ".join(f"({1 << j} if {t} else 0)" for j, t in enumerate(truths)) or "0"
    body = [
        "for k in range(bounds.shape[0] - 1):",
        "    s = start[k]",
        "    fail = -1",
        "    has_prev = False",
        "    pt = -1",
        *(f"    P{o[1:]} = {'0.0' if o[2] == 'f' else '0'}" for o in outs),
        "    for i in range(bounds[k], bounds[k + 1]):",
        *(f"        F_{j} = " + (f"1 if c{j}[i] else 0" if kind == "b" else f"c{j}[i]")
          for j, kind in enumerate(kinds)),
        *_indent(_placed({"\n".join(preds.lines): 0}, "c")[0], 2),
        f"        y = symtab[{code.replace('Q_', 'c0_')}]",
        "        if y < 0:",
        "            fail = i",
        "            break",
        "        p = prog[s, y]",
        *_indent(_dispatch("p", _placed(explorer.programs, "p")), 2),
        "        s = nxt[s, y]",
        "        if mode != 2:",
        *_indent(_output_lines(explorer, outs), 3),
        "    fstate[k] = s",
        "    failed[k] = fail",
    ]
    columns = "".join(f"c{j}, " for j in range(len(kinds)))
    types = "".join(f"{_NUMBA_TYPES[kind]}, " for kind in kinds)
    return "\n".join([
        '"""Generated by engine.qre.kernel: do not edit."""',
        "import math",
        "",
        "from numba import njit",
        "",
        "",
        f'@njit("void({types}{_TYPES})", cache=CACHE, nogil=True, error_model="numpy")',
        f"def kernel({columns}{_SIGNATURE}):",
        *_indent(body, 1),
        "",
    ])


def _output_lines(explorer: _Explorer, outs: list[str]) -> list[str]:
    """Compute the output of state ``s`` after item ``i``, store it and whether it equals the
    previous value of the run (``O_*``: this output's leaves, ``P_*``: the previous value's)."""
    same = ["kd == 1", "has_prev", "ot == pt"]
    same += [_float_equal(o, f"P{o[1:]}") if o[2] == "f" else f"{o} == P{o[1:]}" for o in outs]
    return [
        "kd = 0",
        "ot = -1",
        *(f"{o} = {'0.0' if o[2] == 'f' else '0'}" for o in outs),
        "q = outp[s]",
        *_dispatch("q", _placed(explorer.outputs, "o")),
        "kind[i] = kd",
        "otype[i] = ot",
        *(f"o{o[2]}[i, {o[3:]}] = {o}" for o in outs),
        f"same[i] = {' and '.join(same)}",
        "if kd == 1:",
        "    has_prev = True",
        "    pt = ot",
        *(f"    P{o[1:]} = {o}" for o in outs),
    ]


def _indent(lines: list[str], levels: int) -> list[str]:
    return ["    " * levels + line for line in lines]


def _placed(blocks: dict[str, int], prefix: str) -> list[list[str]]:
    """The lines of each block in id order, its temporaries renamed ``<prefix><id>_<n>``."""
    ordered = sorted(blocks, key=blocks.__getitem__)
    return [[line.replace("Q_", f"{prefix}{n}_") for line in text.split("\n") if line]
            for n, text in enumerate(ordered)]



@dataclass(frozen=True)
class Generated:
    """A query's kernel before numba compiles it: its states, tables and source."""

    states: tuple[tuple[int, tuple[Kind, ...]], ...]  # (shape number, register kinds)
    index: Mapping[tuple[int, tuple[Kind, ...]], int]
    out_kinds: tuple[Kind, ...]
    slots: tuple[int, int]  # register slots: ints, floats
    out_slots: tuple[int, int]
    tables: tuple[np.ndarray, ...]  # symtab, nxt, prog, outp
    source: str


def generate(automaton: Automaton, fields: Sequence[str], kinds: Sequence[str]
             ) -> Generated | str:
    """The kernel of ``automaton`` for fields of ``kinds`` ("i", "f" or "b"), or why there is
    none."""
    values = {f: Val(k, (f"F_{j}",)) for j, (f, k) in enumerate(zip(fields, kinds, strict=True))}
    try:
        preds = Block(values)
        truths = []
        for pred in automaton.machine.preds:
            if pred.expr is None:
                raise Refused(f"the predicate {pred.key!r} is a Python callable, opaque to the "
                              "kernel")
            truths.append(preds.truth(preds.tree(pred.expr.tree, ())))
        explorer = _Explorer(automaton, values)
        explorer.run()
    except Refused as err:
        return str(err)
    symtab = np.full(1 << len(automaton.machine.preds), -1, np.int32)
    for number, truth in enumerate(automaton.symbols):
        symtab[sum(1 << j for j, bit in enumerate(truth) if bit)] = number
    out_kinds = tuple(sorted(explorer.out_kinds, key=explorer.out_kinds.__getitem__))
    out_slots = _counts([[k] for k in out_kinds])
    tables = (symtab, np.array(explorer.nxt, np.int32), np.array(explorer.prog, np.int32),
              np.array(explorer.outp, np.int32))
    return Generated(tuple(explorer.states), dict(explorer.index), out_kinds,
                     _counts([k for _, k in explorer.states]), out_slots, tables,
                     _source(kinds, preds, truths, explorer, out_slots))

"""A numba kernel for strongly typed queries over numeric columns.

``kernel_for(query, kinds)`` takes the query's whole automaton (``compiled.explore``), walks it
together with the types of the registers (a shape reached with an int and with a float register
is two kernel states), flattens every register into int64 / float64 slots (bools in int slots,
tuples flattened, units dropped), generates the predicates, the register updates of every
transition and the output of every state as the Python source of one ``numba.njit`` function,
and compiles it (memoised per query text and field kinds; cached on disk by numba). ``Kernel.run``
then evaluates whole per-key runs in one call over key-sorted columns.

Every operation reproduces Python's result exactly. A step the kernel cannot reproduce (an int64
overflow, a division by zero, an int too large for an exact float conversion, a predicate
combination the analysis found impossible) stops that key's run and is reported in
``KernelRun.failed``: the caller re-runs that key with the interpreter, which gives Python's
answer (or error). States use the canonical encoding of ``compiled.Automaton``, so the kernel
and the interpreter continue each other's states.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from .compiled import Automaton, CompiledState, Sym, _varint, explore
from .expr import Expr, Tree
from .ops import NAMED, Op
from .terms import Term, check_item
from .text import parse
from .values import AMBIGUOUS, NONE, UNIT, Outcome

Kind = Any  # "i" int64 | "f" float64 | "b" bool (an int slot) | "u" unit | a tuple of kinds
MODES = {"every": 0, "changes": 1, "final": 2}
FIELD_KINDS = {"int": "i", "float": "f", "bool": "b"}
_DTYPES = {"i": np.int64, "f": np.float64, "b": np.bool_}
_NUMBA_TYPES = {"i": "int64[::1]", "f": "float64[::1]", "b": "boolean[::1]"}
_NAMES = {"i": "int", "f": "float", "b": "bool", "u": "unit"}
MAX_STATES = 4096
MAX_SLOTS = 256
_INT_MIN = -(2**63)
_EXACT = 2**53  # ints of at most this magnitude convert to float exactly


class _Refused(Exception):
    """Raised while compiling: the query has no kernel, for the reason given."""


@dataclass(frozen=True)
class _Val:
    """A compiled value: its kind and one expression (a name or a literal) per leaf."""

    kind: Kind
    leaves: tuple[str, ...]


def _show(kind: Kind) -> str:
    if isinstance(kind, tuple):
        return "(" + ", ".join(map(_show, kind)) + ")"
    return _NAMES[kind]


def _leaf_kinds(kind: Kind) -> list[str]:
    if isinstance(kind, tuple):
        return [leaf for part in kind for leaf in _leaf_kinds(part)]
    return [] if kind == "u" else [kind]


def _tuple(parts: Sequence[_Val]) -> _Val:
    return _Val(tuple(p.kind for p in parts), tuple(x for p in parts for x in p.leaves))


def _float_literal(value: float) -> str:
    if math.isnan(value):
        return "math.nan"
    if math.isinf(value):
        return "math.inf" if value > 0 else "(-math.inf)"
    return f"({value!r})"


def _as_float(kind: str, leaf: str) -> str:
    return leaf if kind == "f" else f"float({leaf})"


def _outside(leaf: str, bound: int) -> str:
    return f"({leaf} > {bound} or {leaf} < -{bound})"


class _Block:
    """Straight-line numba code for one transition, output or predicate vector. Temporaries are
    named ``Q_<n>`` until the block is placed in the kernel under its own prefix; a failed check
    stops the key's run (``fail = i; break`` inside the item loop)."""

    def __init__(self, fields: Mapping[str, _Val]):
        self.fields = fields
        self.lines: list[str] = []
        self.count = 0
        self.loads: dict[str, str] = {}  # temporary -> the register slot it was loaded from

    def let(self, expr: str) -> str:
        name = f"Q_{self.count}"
        self.count += 1
        self.lines.append(f"{name} = {expr}")
        return name

    def fail_if(self, cond: str) -> None:
        self.lines += [f"if {cond}:", "    fail = i", "    break"]

    # -- values ---------------------------------------------------------------------------

    def const(self, value: Any) -> _Val:
        if value is UNIT:
            return _Val("u", ())
        if isinstance(value, bool):
            return _Val("b", ("1" if value else "0",))
        if isinstance(value, int):
            if not _INT_MIN <= value < 2**63:
                raise _Refused(f"the constant {value} does not fit in 64 bits")
            return _Val("i", (f"({value})",))
        if isinstance(value, float):
            return _Val("f", (_float_literal(value),))
        if isinstance(value, tuple):
            return _tuple([self.const(v) for v in value])
        raise _Refused(f"the value {value!r} is not a number, bool, unit or tuple of them")

    def sym(self, expr: Sym, regs: Sequence[_Val]) -> _Val:
        """A symbolic expression of the compiled automaton over the registers ``regs``."""
        tag = expr[0]
        if tag == "const":
            return self.const(expr[1])
        if tag == "reg":
            return regs[expr[1]]
        if tag == "item":
            return self.call(expr[1], [])
        return self.call(expr[1], [self.sym(arg, regs) for arg in expr[2]])

    def call(self, op: Op, args: list[_Val]) -> _Val:
        args = [self.const(v) for v in op.bound] + args
        if isinstance(op.fn, Expr):
            return self.tree(op.fn.tree, tuple(args))
        if op.key in NAMED and op.fn is NAMED[op.key][1]:
            return self.named(op.key, args)
        raise _Refused(f"the operation {op.key!r} is a Python callable, opaque to the kernel")

    def named(self, key: str, args: list[_Val]) -> _Val:
        if key in ("+", "-", "*"):
            return self.arith(key, args[0], args[1])
        if key == "/":
            return self.truediv(args[0], args[1])
        if key in ("max", "min"):
            return self.extremum(key, args[0], args[1])
        if key == "avg":
            return self.truediv(self.arith("+", args[0], args[1]), self.const(2))
        if key == "pair":
            return _tuple(args)
        if key == "unit":
            return _Val("u", ())
        return args[1] if key == "pi2" else args[0]  # pi1, id

    def tree(self, tree: Tree, params: tuple[_Val, ...]) -> _Val:
        """An expression of the expression language (``expr.run`` semantics)."""
        tag = tree[0]
        if tag == "const":
            return self.const(tree[1])
        if tag == "field":
            return self.fields[tree[1]]
        if tag == "param":
            return params[tree[1]]
        if tag == "tuple":
            return _tuple([self.tree(t, params) for t in tree[1:]])
        if tag == "index":
            return self.index(self.tree(tree[1], params), tree[2])
        if tag in ("not", "neg"):
            value = self.tree(tree[1], params)
            if tag == "neg":
                return self.negate(value)
            return _Val("b", (self.let(f"0 if {self.truth(value)} else 1"),))
        if tag in ("and", "or"):
            left, right = (self.truth(self.tree(t, params)) for t in tree[1:])
            return _Val("b", (self.let(f"1 if ({left} {tag} {right}) else 0"),))
        args = [self.tree(t, params) for t in tree[2:]]
        if tag == "bin":
            return self.truediv(*args) if tree[1] == "/" else self.arith(tree[1], *args)
        if tag == "cmp":
            return self.compare(tree[1], *args)
        return self.absolute(args[0]) if tree[1] == "abs" else self.extremum(tree[1], *args)

    def index(self, base: _Val, i: int) -> _Val:
        if not isinstance(base.kind, tuple) or i >= len(base.kind):
            raise _Refused(f"cannot index a {_show(base.kind)} with [{i}]")
        start = sum(len(_leaf_kinds(k)) for k in base.kind[:i])
        width = len(_leaf_kinds(base.kind[i]))
        return _Val(base.kind[i], base.leaves[start:start + width])

    # -- numbers (Python semantics; a step Python would compute differently fails) ----------

    def scalar(self, value: _Val, what: str) -> tuple[str, str]:
        if value.kind in ("i", "f", "b"):
            return value.kind, value.leaves[0]
        raise _Refused(f"{what} needs numbers, not {_show(value.kind)} values")

    def truth(self, value: _Val) -> str:
        if value.kind in ("i", "b"):
            return f"({value.leaves[0]} != 0)"
        if value.kind == "f":
            return f"({value.leaves[0]} != 0.0)"
        return "True"  # unit and tuples are truthy

    def arith(self, op: str, a: _Val, b: _Val) -> _Val:
        (ka, x), (kb, y) = self.scalar(a, f"'{op}'"), self.scalar(b, f"'{op}'")
        if "f" in (ka, kb):
            x, y = _as_float(ka, x), _as_float(kb, y)
            if op in ("//", "%"):
                self.fail_if(f"{y} == 0.0")
            return _Val("f", (self.let(f"{x} {op} {y}"),))
        if op in ("//", "%"):
            self.fail_if(f"{y} == 0 or ({y} == -1 and {x} == {_INT_MIN})")
        elif op == "*":
            self.fail_if(f"abs(float({x}) * float({y})) >= 9.2e18")
        result = self.let(f"{x} {op} {y}")
        if op == "+":
            self.fail_if(f"(({x} ^ {result}) & ({y} ^ {result})) < 0")
        elif op == "-":
            self.fail_if(f"(({x} ^ {y}) & ({x} ^ {result})) < 0")
        return _Val("i", (result,))

    def truediv(self, a: _Val, b: _Val) -> _Val:
        (ka, x), (kb, y) = self.scalar(a, "'/'"), self.scalar(b, "'/'")
        if "f" in (ka, kb):
            self.fail_if(f"{_as_float(kb, y)} == 0.0")
        else:
            self.fail_if(f"{y} == 0 or {_outside(x, _EXACT)} or {_outside(y, _EXACT)}")
        return _Val("f", (self.let(f"{_as_float(ka, x)} / {_as_float(kb, y)}"),))

    def negate(self, value: _Val) -> _Val:
        kind, x = self.scalar(value, "negation")
        if kind != "f":
            self.fail_if(f"{x} == {_INT_MIN}")
        return _Val("f" if kind == "f" else "i", (self.let(f"-{x}"),))

    def absolute(self, value: _Val) -> _Val:
        kind, x = self.scalar(value, "abs")
        if kind != "f":
            self.fail_if(f"{x} == {_INT_MIN}")
        return _Val("f" if kind == "f" else "i", (self.let(f"abs({x})"),))

    def extremum(self, name: str, a: _Val, b: _Val) -> _Val:
        (ka, x), (kb, y) = self.scalar(a, name), self.scalar(b, name)
        if ka != kb:
            raise _Refused(f"{name} of {_NAMES[ka]} and {_NAMES[kb]} values: the type of the "
                           "result depends on the values")
        op = ">" if name == "max" else "<"
        return _Val(ka, (self.let(f"{y} if {y} {op} {x} else {x}"),))  # builtins max / min

    def compare(self, op: str, a: _Val, b: _Val) -> _Val:
        if a.kind == b.kind == "u" and op in ("==", "!="):
            return _Val("b", ("1" if op == "==" else "0",))
        (ka, x), (kb, y) = self.scalar(a, "comparison"), self.scalar(b, "comparison")
        if (ka == "f") != (kb == "f"):  # Python compares an int with a float exactly
            self.fail_if(_outside(y if ka == "f" else x, _EXACT))
        return _Val("b", (self.let(f"1 if {x} {op} {y} else 0"),))


def _slots(kinds: Sequence[Kind]) -> list[str]:
    """Where each leaf of registers of ``kinds`` lives: ``ri[k, j]`` or ``rf[k, j]``."""
    refs, n_int, n_float = [], 0, 0
    for leaf in (x for kind in kinds for x in _leaf_kinds(kind)):
        if leaf == "f":
            refs.append(f"rf[k, {n_float}]")
            n_float += 1
        else:
            refs.append(f"ri[k, {n_int}]")
            n_int += 1
    return refs


def _load(block: _Block, kinds: Sequence[Kind]) -> list[_Val]:
    """Read registers of ``kinds`` into temporaries (before any register is written)."""
    refs = iter(_slots(kinds))
    values = []
    for kind in kinds:
        leaves = []
        for _ in _leaf_kinds(kind):
            ref = next(refs)
            leaves.append(block.let(ref))
            block.loads[leaves[-1]] = ref
        values.append(_Val(kind, tuple(leaves)))
    return values


def _store(block: _Block, values: Sequence[_Val]) -> None:
    """Write ``values`` as the next registers, skipping slots that keep their loaded value."""
    refs = _slots([v.kind for v in values])
    leaves = [x for v in values for x in v.leaves]
    block.lines += [f"{ref} = {x}" for ref, x in zip(refs, leaves, strict=True)
                    if block.loads.get(x) != ref]


def _counts(kind_lists: Sequence[Sequence[Kind]]) -> tuple[int, int]:
    """The most int-like and float leaves any of ``kind_lists`` needs."""
    leaves = [[x for k in kinds for x in _leaf_kinds(k)] for kinds in kind_lists]
    return (max((sum(x != "f" for x in ls) for ls in leaves), default=0),
            max((sum(x == "f" for x in ls) for ls in leaves), default=0))


class _Explorer:
    """Walks (shape, register kinds) pairs breadth first, generating every block once."""

    def __init__(self, automaton: Automaton, fields: Mapping[str, _Val]):
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
                block = _Block(self.fields)
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
                raise _Refused(f"more than {MAX_STATES} (shape, register type) states")
            if sum(_counts([kinds])) > MAX_SLOTS:
                raise _Refused(f"a state needs more than {MAX_SLOTS} register slots")
            self.index[key] = len(self.states)
            self.states.append(key)
        return self.index[key]

    def _output(self, shape: int, kinds: tuple[Kind, ...]) -> int:
        block = _Block(self.fields)
        regs = _load(block, kinds)
        values = [block.sym(expr, regs) for expr in self.auto.shapes[shape].out_syms]
        if len(values) == 1:
            (value,) = values
            kind_id = self.out_kinds.setdefault(value.kind, len(self.out_kinds))
            n_int = n_float = 0
            for leaf, x in zip(_leaf_kinds(value.kind), value.leaves, strict=True):
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


def _source(kinds: Sequence[str], preds: _Block, truths: list[str], explorer: _Explorer,
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


def _kernel_dir() -> Path:
    """Where generated kernels and numba's cache live: ``$REPRISE_KERNEL_DIR``, else the user's
    cache directory (never a shared temporary directory: the files are imported)."""
    configured = os.environ.get("REPRISE_KERNEL_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "reprise" / "qre-kernels"


def _compile_source(source: str) -> Any:
    """The ``kernel`` function of ``source``: imported from a file so that numba caches the
    machine code on disk, or executed in memory when no file can be written."""
    name = "reprise_qre_kernel_" + hashlib.sha256(source.encode()).hexdigest()[:24]
    if name in sys.modules:
        return sys.modules[name].kernel
    path = _write_source(name, source.replace("cache=CACHE", "cache=True"))
    if path is None:
        namespace: dict[str, Any] = {}
        exec(compile(source.replace("cache=CACHE", "cache=False"), name, "exec"), namespace)
        return namespace["kernel"]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = sys.modules[name] = importlib.util.module_from_spec(spec)  # numba's disk cache
    try:  # finds the module's globals by name
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module.kernel


def _write_source(name: str, source: str) -> Path | None:
    """The path of the module file ``name`` holding exactly ``source`` (written atomically), or
    None if it cannot be written."""
    try:
        path = _kernel_dir() / f"{name}.py"
        if path.exists() and path.read_text() == source:
            return path
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(source)
        os.replace(partial, path)
    except (OSError, RuntimeError):  # RuntimeError: no home directory
        return None
    return path


@dataclass(frozen=True)
class KernelStates:
    """Per-key states: kernel state number, int64 and float64 register slots."""

    state: np.ndarray  # int32[K]
    ints: np.ndarray  # int64[K, slots]
    floats: np.ndarray  # float64[K, slots]


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
    states: tuple[tuple[int, tuple[Kind, ...]], ...]  # (shape number, register kinds)
    index: Mapping[tuple[int, tuple[Kind, ...]], int]
    out_kinds: tuple[Kind, ...]
    slots: tuple[int, int]  # register slots: ints, floats
    out_slots: tuple[int, int]
    tables: tuple[np.ndarray, ...]  # symtab, nxt, prog, outp
    source: str
    fn: Any

    def __repr__(self) -> str:
        fields = ", ".join(f"{f}: {_NAMES[k]}" for f, k in zip(self.fields, self.kinds,
                                                                strict=True))
        return (f"Kernel({fields}; {len(self.automaton.shapes)} shapes, {len(self.states)} "
                f"states, register slots {self.slots})")

    def initial(self, keys: int) -> KernelStates:
        """``keys`` states before any item."""
        return KernelStates(np.zeros(keys, np.int32), np.zeros((keys, self.slots[0]), np.int64),
                            np.zeros((keys, self.slots[1]), np.float64))

    def load(self, blobs: Sequence[bytes | None]) -> tuple[KernelStates, np.ndarray]:
        """States from canonical bytes (None: initial) and which of them the kernel can
        represent (a state with, say, a float where this kernel has an int is not). Blobs
        are matched against each state's encoding with array operations; one that matches
        none is decoded on its own."""
        states = self.initial(len(blobs))
        ok = np.ones(len(blobs), np.bool_)
        given = np.array([k for k, blob in enumerate(blobs) if blob is not None], np.int64)
        matched = self._match(blobs, given, states)
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

    def _match(self, blobs: Sequence[bytes | None], given: np.ndarray, states: KernelStates
               ) -> np.ndarray:
        """Decode the blobs ``given`` that are exactly the encoding of a state of this kernel
        into ``states``; returns which were."""
        chunks = [blob for blob in blobs if blob is not None]
        lengths = np.fromiter(map(len, chunks), np.int64, len(chunks))
        end = np.cumsum(lengths)
        start = end - lengths
        data = np.frombuffer(b"".join(chunks) + b"\0", np.uint8)
        shape, _, valid = _read_varints(data, start, end)
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
        """``dump`` of every key, with array operations."""
        size = np.zeros(len(states.state), np.int64)
        pieces = []
        for number, keys in _groups(states.state):
            for token in self._templates[number]:
                matrix, used = _encode(token, states, keys)
                pieces.append((keys, size[keys], matrix, used))
                size[keys] += used
        end = np.cumsum(size)
        start = end - size
        data = np.zeros(int(end[-1]) if len(end) else 0, np.uint8)
        for keys, offset, matrix, used in pieces:
            columns = np.arange(matrix.shape[1])
            inside = columns < used[:, None]
            data[((start[keys] + offset)[:, None] + columns)[inside]] = matrix[inside]
        blob = data.tobytes()
        return [blob[a:b] for a, b in zip(start.tolist(), end.tolist(), strict=True)]

    def registers(self, states: KernelStates, k: int) -> tuple[Any, ...]:
        """The Python register values of key ``k`` (as the interpreter holds them)."""
        _, kinds = self.states[states.state[k]]
        ints, floats = iter(states.ints[k].tolist()), iter(states.floats[k].tolist())
        return tuple(_build(kind, ints, floats) for kind in kinds)

    def dump(self, states: KernelStates, k: int) -> bytes:
        """The canonical bytes of key ``k``'s state (``compiled.Automaton.encode``)."""
        return self.automaton.encode(self.states[states.state[k]][0], self.registers(states, k))

    def interpreter_state(self, states: KernelStates, k: int) -> CompiledState:
        """Key ``k``'s state for the compiled interpreter."""
        shape = self.automaton.shapes[self.states[states.state[k]][0]]
        return CompiledState(self.automaton.machine, shape, self.registers(states, k))

    def outcome(self, result: KernelRun, i: int) -> Outcome:
        """The output after item ``i`` (modes every and changes)."""
        kind = result.kind[i]
        if kind != 1:
            return AMBIGUOUS if kind == 2 else NONE
        ints, floats = iter(result.ints[i].tolist()), iter(result.floats[i].tolist())
        return Outcome("value", _build(self.out_kinds[result.otype[i]], ints, floats))

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
                           np.zeros((per_item, self.out_slots[0]), np.int64),
                           np.zeros((per_item, self.out_slots[1]), np.float64),
                           final, np.empty(len(bounds) - 1, np.int64))
        self.fn(*cols, bounds, *self.tables, np.ascontiguousarray(states.state, np.int32),
                final.ints, final.floats, MODES[mode], result.kind, result.same, result.otype,
                result.ints, result.floats, final.state, result.failed)
        return result

    def _check(self, bounds: np.ndarray, states: KernelStates) -> None:
        """Reject inputs that would make the kernel (which has no bounds checks) read or write
        outside its arrays."""
        keys = len(bounds) - 1
        if keys < 0 or bounds[0] != 0 or (np.diff(bounds) < 0).any():
            raise ValueError("bounds must start at 0 and never decrease")
        if (len(states.state) != keys or states.ints.shape != (keys, self.slots[0])
                or states.floats.shape != (keys, self.slots[1])):
            raise ValueError(f"states must hold {keys} rows of this kernel's register slots")
        if keys and not (states.state.min() >= 0 and states.state.max() < len(self.states)):
            raise ValueError("states hold a state number this kernel does not have")

    @staticmethod
    def _column(columns: Mapping[str, np.ndarray], name: str, kind: str, n: int) -> np.ndarray:
        col = np.asarray(columns[name])
        expected = {"i": np.integer, "f": np.floating, "b": np.bool_}[kind]
        if (not np.issubdtype(col.dtype, expected) or len(col) < n
                or not np.can_cast(col.dtype, _DTYPES[kind])):
            raise ValueError(f"column {name!r} must hold at least {n} values of kind "
                             f"{_NAMES[kind]}, got {len(col)} of dtype {col.dtype}")
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


def _kind_of(value: Any) -> Kind | None:
    """The kernel kind of a Python value, or None if no kernel slot holds it."""
    if value is UNIT:
        return "u"
    if isinstance(value, bool):
        return "b"
    if isinstance(value, int):
        return "i" if _INT_MIN <= value < 2**63 else None
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


def _build(kind: Kind, ints: Iterator[int], floats: Iterator[float]) -> Any:
    if kind == "u":
        return UNIT
    if kind == "i":
        return int(next(ints))
    if kind == "b":
        return bool(next(ints))
    if kind == "f":
        return float(next(floats))
    return tuple(_build(k, ints, floats) for k in kind)


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
    _varint(literal, shape)
    used = [0, 0]

    def walk(kind: Kind) -> None:
        if isinstance(kind, tuple):
            literal.extend(b"t")
            _varint(literal, len(kind))
            for part in kind:
                walk(part)
        elif kind == "u":
            literal.extend(b"u")
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
    bytes of each row are used (``compiled._pack``: zigzag varint ints, little-endian floats)."""
    tag, arg = token
    n = len(keys)
    if tag == "lit":
        row = np.frombuffer(arg, np.uint8)
        return np.broadcast_to(row, (n, len(row))), np.full(n, len(row))
    if tag == "f":
        out = np.empty((n, 9), np.uint8)
        out[:, 0] = ord("f")
        out[:, 1:] = states.floats[keys, arg].astype("<f8").view(np.uint8).reshape(n, 8)
        return out, np.full(n, 9)
    values = states.ints[keys, arg]
    if tag == "b":
        return (np.where(values != 0, ord("T"), ord("F")).astype(np.uint8)[:, None],
                np.ones(n, np.int64))
    zigzag = (values.view(np.uint64) << np.uint64(1)) ^ (values >> 63).view(np.uint64)
    groups = np.stack([zigzag >> np.uint64(7 * b) for b in range(10)], axis=1)
    more = np.zeros((n, 10), np.bool_)
    more[:, :9] = groups[:, 1:] != 0
    out = np.empty((n, 11), np.uint8)
    out[:, 0] = ord("i")
    out[:, 1:] = (groups & np.uint64(0x7F)) | (more.astype(np.uint64) << np.uint64(7))
    return out, 2 + more.sum(axis=1)


def _read_varints(data: np.ndarray, at: np.ndarray, end: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The varint at each of ``at`` (``compiled._read_varint``) if it ends before ``end`` and
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


def _decode(tokens: list[_Token], data: np.ndarray, start: np.ndarray, end: np.ndarray
            ) -> tuple[np.ndarray, dict[int, np.ndarray], dict[int, np.ndarray]]:
    """Which of the blobs ``data[start:end]`` are exactly the encoding ``tokens``, and their
    int and float register slots."""
    fits = np.ones(len(start), np.bool_)
    at = start.copy()
    last = len(data) - 1
    ints: dict[int, np.ndarray] = {}
    floats: dict[int, np.ndarray] = {}
    for tag, arg in tokens:
        width = len(arg) if tag == "lit" else 9 if tag == "f" else 1
        fits &= at + width <= end
        window = data[np.minimum(at[:, None] + np.arange(width), last)]
        if tag == "lit":
            fits &= (window == np.frombuffer(arg, np.uint8)).all(axis=1)
        elif tag == "f":
            fits &= window[:, 0] == ord("f")
            floats[arg] = np.ascontiguousarray(window[:, 1:]).view("<f8").ravel()
        elif tag == "b":
            fits &= (window[:, 0] == ord("T")) | (window[:, 0] == ord("F"))
            ints[arg] = (window[:, 0] == ord("T")).astype(np.int64)
        else:
            fits &= window[:, 0] == ord("i")
            zigzag, after, fine = _read_varints(data, at + 1, end)
            fits &= fine
            ints[arg] = ((zigzag >> np.uint64(1)) ^ (np.uint64(0) - (zigzag & np.uint64(1)))
                         ).view(np.int64)
            width = after - at
        at = np.where(fits, at + width, start)
    return fits & (at == end), ints, floats


def column_kind(values: Sequence[Any]) -> str | None:
    """The kernel kind of a field holding ``values`` ("i", "f" or "b"), or None if they are
    mixed or not numbers (the interpreter must run them)."""
    types = {type(v) for v in values}
    if len(types) != 1:
        return None if types else "i"
    (kind,) = types
    if kind is int:
        return "i" if all(_INT_MIN <= v < 2**63 for v in values) else None
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
    values = {f: _Val(k, (f"F_{j}",)) for j, (f, k) in enumerate(zip(fields, kinds, strict=True))}
    try:
        preds = _Block(values)
        truths = []
        for pred in automaton.machine.preds:
            if pred.expr is None:
                raise _Refused(f"the predicate {pred.key!r} is a Python callable, opaque to the "
                               "kernel")
            truths.append(preds.truth(preds.tree(pred.expr.tree, ())))
        explorer = _Explorer(automaton, values)
        explorer.run()
    except _Refused as err:
        return str(err)
    symtab = np.full(1 << len(automaton.machine.preds), -1, np.int32)
    for number, truth in enumerate(automaton.symbols):
        symtab[sum(1 << j for j, bit in enumerate(truth) if bit)] = number
    out_kinds = tuple(sorted(explorer.out_kinds, key=explorer.out_kinds.__getitem__))
    out_slots = _counts([[k] for k in out_kinds])
    source = _source(kinds, preds, truths, explorer, out_slots)
    tables = (symtab, np.array(explorer.nxt, np.int32), np.array(explorer.prog, np.int32),
              np.array(explorer.outp, np.int32))
    return Kernel(automaton, fields, kinds, tuple(explorer.states), dict(explorer.index),
                  out_kinds, _counts([k for _, k in explorer.states]), out_slots, tables, source,
                  _compile_source(source))


def kernel_for(query: Term | str, kinds: Mapping[str, str] | None = None) -> Kernel | None:
    """The kernel of ``query`` (see ``compile_kernel``), or None."""
    result = compile_kernel(query, kinds)
    return result if isinstance(result, Kernel) else None


def kernel_reason(query: Term | str, kinds: Mapping[str, str] | None = None) -> str | None:
    """Why ``query`` has no kernel, or None if it has one."""
    result = compile_kernel(query, kinds)
    return result if isinstance(result, str) else None

"""Values of the numba kernel's code generator: register kinds and straight-line code.

A register of the compiled automaton has a *kind*: ``"i"`` (int64), ``"f"`` (float64), ``"b"``
(bool, held in an int slot), ``"u"`` (unit, no slot) or a tuple of kinds. ``Block`` turns the
symbolic register programs and expressions of a query into numba source lines over such values,
reproducing Python's result exactly: a step Python would compute differently (an int64
overflow, a division by zero, an int too large for an exact float conversion) makes the
generated code stop the key's run (``fail = i; break``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..expr.parser import Tree
from ..expr.values import UNIT
from .compiled import Sym
from .expr import Expr
from .ops import NAMED, Op

Kind = Any  # "i" int64 | "f" float64 | "b" bool (an int slot) | "u" unit | a tuple of kinds
#: Readable name of each scalar kind.
KIND_NAMES = {"i": "int", "f": "float", "b": "bool", "u": "unit"}
INT_MIN = -(2**63)
EXACT = 2**53  # ints of at most this magnitude convert to float exactly


class Refused(Exception):
    """Raised while compiling: the query has no kernel, for the reason given."""


@dataclass(frozen=True)
class Val:
    """A compiled value: its kind and one expression (a name or a literal) per leaf."""

    kind: Kind
    leaves: tuple[str, ...]


def show_kind(kind: Kind) -> str:
    """A kind as users read it, e.g. ``(int, float)``."""
    if isinstance(kind, tuple):
        return "(" + ", ".join(map(show_kind, kind)) + ")"
    return KIND_NAMES[kind]


def leaf_kinds(kind: Kind) -> list[str]:
    """The kinds of the slots a value of ``kind`` occupies, in order (units take none)."""
    if isinstance(kind, tuple):
        return [leaf for part in kind for leaf in leaf_kinds(part)]
    return [] if kind == "u" else [kind]


def tuple_of(parts: Sequence[Val]) -> Val:
    """The tuple of the compiled values ``parts``."""
    return Val(tuple(p.kind for p in parts), tuple(x for p in parts for x in p.leaves))


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


class Block:
    """Straight-line numba code for one transition, output or predicate vector. Temporaries are
    named ``Q_<n>`` until the block is placed in the kernel under its own prefix; a failed check
    stops the key's run (``fail = i; break`` inside the item loop)."""

    def __init__(self, fields: Mapping[str, Val]):
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

    def const(self, value: Any) -> Val:
        if value is UNIT:
            return Val("u", ())
        if isinstance(value, bool):
            return Val("b", ("1" if value else "0",))
        if isinstance(value, int):
            if not INT_MIN <= value < 2**63:
                raise Refused(f"the constant {value} does not fit in 64 bits")
            return Val("i", (f"({value})",))
        if isinstance(value, float):
            return Val("f", (_float_literal(value),))
        if isinstance(value, tuple):
            return tuple_of([self.const(v) for v in value])
        raise Refused(f"the value {value!r} is not a number, bool, unit or tuple of them")

    def sym(self, expr: Sym, regs: Sequence[Val]) -> Val:
        """A symbolic expression of the compiled automaton over the registers ``regs``."""
        tag = expr[0]
        if tag == "const":
            return self.const(expr[1])
        if tag == "reg":
            return regs[expr[1]]
        if tag == "item":
            return self.call(expr[1], [])
        return self.call(expr[1], [self.sym(arg, regs) for arg in expr[2]])

    def call(self, op: Op, args: list[Val]) -> Val:
        args = [self.const(v) for v in op.bound] + args
        if isinstance(op.fn, Expr):
            return self.tree(op.fn.tree, tuple(args))
        if op.key in NAMED and op.fn is NAMED[op.key][1]:
            return self.named(op.key, args)
        raise Refused(f"the operation {op.key!r} is a Python callable, opaque to the kernel")

    def named(self, key: str, args: list[Val]) -> Val:
        if key in ("+", "-", "*"):
            return self.arith(key, args[0], args[1])
        if key == "/":
            return self.truediv(args[0], args[1])
        if key in ("max", "min"):
            return self.extremum(key, args[0], args[1])
        if key == "avg":
            return self.truediv(self.arith("+", args[0], args[1]), self.const(2))
        if key == "pair":
            return tuple_of(args)
        if key == "unit":
            return Val("u", ())
        return args[1] if key == "pi2" else args[0]  # pi1, id

    def tree(self, tree: Tree, params: tuple[Val, ...]) -> Val:
        """An expression of the expression language (``expr.run`` semantics)."""
        tag = tree[0]
        if tag == "const":
            return self.const(tree[1])
        if tag == "field":
            return self.fields[tree[1]]
        if tag == "param":
            return params[tree[1]]
        if tag == "tuple":
            return tuple_of([self.tree(t, params) for t in tree[1:]])
        if tag == "index":
            return self.index(self.tree(tree[1], params), tree[2])
        if tag in ("not", "neg"):
            value = self.tree(tree[1], params)
            if tag == "neg":
                return self.negate(value)
            return Val("b", (self.let(f"0 if {self.truth(value)} else 1"),))
        if tag in ("and", "or"):
            left, right = (self.truth(self.tree(t, params)) for t in tree[1:])
            return Val("b", (self.let(f"1 if ({left} {tag} {right}) else 0"),))
        args = [self.tree(t, params) for t in tree[2:]]
        if tag == "bin":
            return self.truediv(*args) if tree[1] == "/" else self.arith(tree[1], *args)
        if tag == "cmp":
            return self.compare(tree[1], *args)
        return self.absolute(args[0]) if tree[1] == "abs" else self.extremum(tree[1], *args)

    def index(self, base: Val, i: int) -> Val:
        if not isinstance(base.kind, tuple) or i >= len(base.kind):
            raise Refused(f"cannot index a {show_kind(base.kind)} with [{i}]")
        start = sum(len(leaf_kinds(k)) for k in base.kind[:i])
        width = len(leaf_kinds(base.kind[i]))
        return Val(base.kind[i], base.leaves[start:start + width])

    # -- numbers (Python semantics; a step Python would compute differently fails) ----------

    def scalar(self, value: Val, what: str) -> tuple[str, str]:
        if value.kind in ("i", "f", "b"):
            return value.kind, value.leaves[0]
        raise Refused(f"{what} needs numbers, not {show_kind(value.kind)} values")

    def truth(self, value: Val) -> str:
        if value.kind in ("i", "b"):
            return f"({value.leaves[0]} != 0)"
        if value.kind == "f":
            return f"({value.leaves[0]} != 0.0)"
        return "True"  # unit and tuples are truthy

    def arith(self, op: str, a: Val, b: Val) -> Val:
        (ka, x), (kb, y) = self.scalar(a, f"'{op}'"), self.scalar(b, f"'{op}'")
        if "f" in (ka, kb):
            x, y = _as_float(ka, x), _as_float(kb, y)
            if op in ("//", "%"):
                self.fail_if(f"{y} == 0.0")
            return Val("f", (self.let(f"{x} {op} {y}"),))
        if op in ("//", "%"):
            self.fail_if(f"{y} == 0 or ({y} == -1 and {x} == {INT_MIN})")
        elif op == "*":
            self.fail_if(f"abs(float({x}) * float({y})) >= 9.2e18")
        result = self.let(f"{x} {op} {y}")
        if op == "+":
            self.fail_if(f"(({x} ^ {result}) & ({y} ^ {result})) < 0")
        elif op == "-":
            self.fail_if(f"(({x} ^ {y}) & ({x} ^ {result})) < 0")
        return Val("i", (result,))

    def truediv(self, a: Val, b: Val) -> Val:
        (ka, x), (kb, y) = self.scalar(a, "'/'"), self.scalar(b, "'/'")
        if "f" in (ka, kb):
            self.fail_if(f"{_as_float(kb, y)} == 0.0")
        else:
            self.fail_if(f"{y} == 0 or {_outside(x, EXACT)} or {_outside(y, EXACT)}")
        return Val("f", (self.let(f"{_as_float(ka, x)} / {_as_float(kb, y)}"),))

    def negate(self, value: Val) -> Val:
        kind, x = self.scalar(value, "negation")
        if kind != "f":
            self.fail_if(f"{x} == {INT_MIN}")
        return Val("f" if kind == "f" else "i", (self.let(f"-{x}"),))

    def absolute(self, value: Val) -> Val:
        kind, x = self.scalar(value, "abs")
        if kind != "f":
            self.fail_if(f"{x} == {INT_MIN}")
        return Val("f" if kind == "f" else "i", (self.let(f"abs({x})"),))

    def extremum(self, name: str, a: Val, b: Val) -> Val:
        (ka, x), (kb, y) = self.scalar(a, name), self.scalar(b, name)
        if ka != kb:
            raise Refused(f"{name} of {KIND_NAMES[ka]} and {KIND_NAMES[kb]} values: the type of "
                          "the result depends on the values")
        op = ">" if name == "max" else "<"
        return Val(ka, (self.let(f"{y} if {y} {op} {x} else {x}"),))  # builtins max / min

    def compare(self, op: str, a: Val, b: Val) -> Val:
        if a.kind == b.kind == "u" and op in ("==", "!="):
            return Val("b", ("1" if op == "==" else "0",))
        (ka, x), (kb, y) = self.scalar(a, "comparison"), self.scalar(b, "comparison")
        if (ka == "f") != (kb == "f"):  # Python compares an int with a float exactly
            self.fail_if(_outside(y if ka == "f" else x, EXACT))
        return Val("b", (self.let(f"1 if {x} {op} {y} else 0"),))


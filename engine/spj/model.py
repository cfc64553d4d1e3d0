"""The normalised query: occurrences, atoms in the papers' form, projection or aggregates."""

from __future__ import annotations

from dataclasses import dataclass, field

INTEGER, TIMESTAMP, OTHER = "int", "timestamp", "other"
AGG_FUNCS = ("COUNT", "SUM", "AVG", "MIN", "MAX", "COUNT_DISTINCT", "MEDIAN")
HOLISTIC = ("COUNT_DISTINCT", "MEDIAN")
DUP_INSENSITIVE = ("MIN", "MAX", "COUNT_DISTINCT")


@dataclass(frozen=True, order=True)
class Attr:
    """Attribute ``name`` of stream occurrence ``occ`` (the alias in FROM)."""

    occ: str
    name: str

    def __str__(self) -> str:
        return f"{self.occ}.{self.name}"


Term = Attr | int
"""An element of the papers: an attribute or an integer constant."""


@dataclass(frozen=True)
class Atom:
    """``left op right``, op in ``<``, ``<=``, ``=`` (SQL ``x <= k`` becomes ``x < k+1``)."""

    left: Term
    op: str
    right: Term

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"

    def holds(self, env: dict[Attr, int]) -> bool:
        """Evaluate on a full assignment of the attributes."""
        a = env[self.left] if isinstance(self.left, Attr) else self.left
        b = env[self.right] if isinstance(self.right, Attr) else self.right
        return a < b if self.op == "<" else a <= b if self.op == "<=" else a == b


@dataclass(frozen=True)
class Aggregate:
    """``func(arg)``; ``arg`` is None for ``COUNT(*)``."""

    func: str
    arg: Attr | None

    def __str__(self) -> str:
        inner = "*" if self.arg is None else str(self.arg)
        if self.func == "COUNT_DISTINCT":
            return f"COUNT(DISTINCT {inner})"
        return f"{self.func}({inner})"


@dataclass(frozen=True)
class Const:
    """A constant SELECT item (``SELECT 1``, ``SELECT 'hit'``): the same value in every row."""

    value: int | str | bool

    def __str__(self) -> str:
        if isinstance(self.value, bool):
            return "TRUE" if self.value else "FALSE"
        if isinstance(self.value, str):
            return "'" + self.value.replace("'", "''") + "'"
        return str(self.value)


Output = Attr | Aggregate | Const
"""A SELECT item."""


@dataclass(frozen=True)
class Query:
    """``SELECT [DISTINCT] output FROM occurrences WHERE atoms [GROUP BY group_by]``."""

    occurrences: dict[str, str]  # alias -> stream name, in FROM order
    columns: dict[str, tuple[str, ...]]  # stream -> its attributes
    types: dict[str, dict[str, str]]  # stream -> attribute -> INTEGER | TIMESTAMP | OTHER
    output: tuple[Output, ...]
    distinct: bool
    atoms: tuple[Atom, ...]
    group_by: tuple[Attr, ...] = ()
    aggregate: bool = False
    timestamps: dict[str, str] = field(default_factory=dict)

    @property
    def semantics(self) -> str:
        return "set" if self.distinct else "bag"

    @property
    def projection(self) -> tuple[Attr, ...]:
        return tuple(o for o in self.output if isinstance(o, Attr))

    @property
    def constants(self) -> tuple[tuple[int, Const], ...]:
        """(position in the output, item) of every constant SELECT item."""
        return tuple((k, o) for k, o in enumerate(self.output) if isinstance(o, Const))

    @property
    def aggregates(self) -> tuple[Aggregate, ...]:
        return tuple(o for o in self.output if isinstance(o, Aggregate))

    def attrs(self, occ: str) -> tuple[Attr, ...]:
        return tuple(Attr(occ, c) for c in self.columns[self.occurrences[occ]])

    def type_of(self, a: Attr) -> str:
        return self.types[self.occurrences[a.occ]][a.name]

    @property
    def has_self_join(self) -> bool:
        return len(set(self.occurrences.values())) < len(self.occurrences)

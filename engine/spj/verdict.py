"""Violations and the internal verdict shared by the SPJ, aggregate and application-time rules."""

from __future__ import annotations

from dataclasses import dataclass, field

from .closure import Closure
from .lto import Finding, Spj
from .model import Attr
from .synopsis import Synopsis


@dataclass(frozen=True)
class Violation:
    """A violated condition and the attributes it is about."""

    condition: str
    explanation: str
    attributes: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"condition": self.condition, "explanation": self.explanation,
                "attributes": list(self.attributes)}


@dataclass
class Verdict:
    """What a rule set decided; ``findings`` feed the witness search."""

    bounded: bool
    violations: list[Violation] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    proof: str = "exact"  # "exact" | "sufficient" (bounded) | "not_certified" (rejected)
    spj: Spj | None = None
    closure: Closure | None = None
    #: The synopsis the rules certified, when it is not the §7 one built from ``spj``.
    synopsis: Synopsis | None = None


def placement(cl: Closure, a: Attr) -> str:
    """Where ``a`` lies in a (derived LTO) closure, e.g. ``S.B > 10``."""
    lo, hi = cl.lower(a), cl.upper(a)
    if lo == hi:
        return f"{a} = {int(lo)}"
    if lo > -float("inf") and hi < float("inf"):
        return f"{int(lo)} <= {a} <= {int(hi)}"
    if lo > -float("inf"):
        return f"{a} > {int(lo) - 1}"
    if hi < float("inf"):
        return f"{a} < {int(hi) + 1}"
    return f"{a} unconstrained"


def explain(f: Finding, prefix: str = "", condition: str | None = None) -> Violation:
    """A violation naming the attributes and their placement in the witnessing LTO query."""
    text = prefix + f.explanation
    if f.closure is not None and f.condition == "C3":
        text += " (in the derived LTO query with " + ", ".join(
            placement(f.closure, a) for a in f.attrs) + ")"
    return Violation(condition or f.condition, text, tuple(str(a) for a in f.attrs))

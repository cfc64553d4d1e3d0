"""``analyze``: parse, pick the rule set, and package the verdict with its evidence."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from .apptime import apptime_verdict
from .model import Query
from .parse import Schemas, parse
from .rules import aggregate_verdict, spj_verdict
from .synopsis import Synopsis, aggregate_synopsis, spj_synopsis
from .verdict import Verdict, Violation
from .witness import Witness, build


@dataclass
class Analysis:
    """The verdict on one query: bounded or not, why, and the evidence for it."""

    sql: str
    query: Query
    bounded: bool
    semantics: str
    violations: list[Violation]
    proof: str
    notes: list[str]
    synopsis: Synopsis | None
    #: The rule-level verdict the analysis was drawn from (its findings, closure and SPJ form).
    verdict: Verdict = field(repr=False)

    @cached_property
    def witness(self) -> Witness | None:
        """An adversarial input family forcing linear memory (None if bounded or not found)."""
        if self.bounded or self.query.timestamps:
            return None
        consts = self.verdict.spj.constants if self.verdict.spj else ()
        for f, v in zip(self.verdict.findings, self.verdict.violations, strict=False):
            w = build(self.query, f, consts, v.condition)
            if w is not None:
                return w
        return None

    def to_json(self) -> dict:
        out = {"bounded": self.bounded, "semantics": self.semantics,
               "violations": [v.to_json() for v in self.violations],
               "proof": self.proof, "notes": list(self.notes)}
        if self.synopsis is not None:
            out["synopsis"] = self.synopsis.to_json()
        if not self.bounded:
            w = self.witness
            out["witness"] = w.to_json() if w else None
        return out


def analyze(sql: str, schemas: Schemas, timestamps: Mapping[str, str] | None = None
            ) -> Analysis:
    """Decide whether ``sql`` can be evaluated over the streams in bounded memory."""
    query = parse(sql, schemas, timestamps)
    if query.timestamps:
        verdict = apptime_verdict(query)
    elif query.aggregate:
        verdict = aggregate_verdict(query)
    else:
        verdict = spj_verdict(query)
    if not query.aggregate and not query.projection:
        verdict.notes.append("no projected attributes: the answer is " + (
            "whether some result exists" if query.distinct else "the number of result tuples"))
    synopsis = verdict.synopsis
    if synopsis is None and verdict.bounded and verdict.spj is not None \
            and verdict.closure is not None:
        if query.aggregate:
            synopsis = aggregate_synopsis(verdict.spj, verdict.closure, query.group_by,
                                          query.aggregates)
        else:
            synopsis = spj_synopsis(verdict.spj, verdict.closure)
    return Analysis(sql, query, verdict.bounded, query.semantics, verdict.violations,
                    verdict.proof, verdict.notes, synopsis, verdict)

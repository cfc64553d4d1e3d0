"""Verdicts for plain SPJ queries (Thms 5.6/5.10 via Fig. 2) and for aggregates (§8.2)."""

from __future__ import annotations

from .checker import check
from .lto import Finding, Spj, derived_ltos, lto_conditions, spj_of
from .model import DUP_INSENSITIVE, HOLISTIC, Atom, Attr, Query
from .selfjoin import facts, remove_redundant
from .verdict import Verdict, Violation, explain

LTO_BUDGET = 20_000


def _set_self_join_exact(spj: Spj, bases: dict[str, str]) -> list[Finding] | None:
    """Per derived LTO: drop redundant occurrences, then Thm 5.10 (None: too many LTOs)."""
    for count, cl in enumerate(derived_ltos(spj)):
        if count >= LTO_BUDGET:
            return None
        lto = Spj(spj.occs, spj.proj, facts(spj, cl), False)
        reduced, _ = remove_redundant(lto, bases)
        found = lto_conditions(reduced, reduced.closure())
        if found:
            return found
    return []


def spj_verdict(query: Query) -> Verdict:
    """Fig. 2 on the query; set self-joins first lose their redundant occurrences (§8.1)."""
    bag = not query.distinct
    spj = spj_of(query, query.projection, bag)
    notes: list[str] = []
    if not bag and query.has_self_join:
        spj, removed = remove_redundant(spj, query.occurrences)
        if removed:
            notes.append("removed redundant occurrences: " + ", ".join(removed))
    cl = spj.closure()
    if not cl.sat:
        return Verdict(True, notes=[*notes, "predicate unsatisfiable: the output is empty"],
                       spj=spj, closure=cl)
    findings = check(spj, cl)
    proof = "exact"
    bases = {o: query.occurrences[o] for o in spj.occs}
    if findings and not bag and len(set(bases.values())) < len(bases):
        exact = _set_self_join_exact(spj, bases)
        if exact is None:
            proof = "not_certified"
            notes.append("set self-join: Thm 5.10 is only sufficient and the per-LTO check "
                         "exceeded its budget")
        else:
            findings = exact
    return Verdict(not findings, [explain(f) for f in findings], findings, notes, proof,
                   spj, cl)


def aggregate_verdict(query: Query) -> Verdict:
    """Thm 8.5 (one stream) or Thm 8.6 with the corrected MIN/MAX condition (several)."""
    group, aggs = query.group_by, query.aggregates
    args = tuple(a.arg for a in aggs if a.arg is not None)
    base = spj_of(query, group, True, extra=args)
    cl = base.closure()
    verdict = Verdict(True, spj=base, closure=cl)
    if not cl.sat:
        verdict.notes.append("predicate unsatisfiable: the answer never changes")
        return verdict
    found: list[tuple[Finding, Violation]] = []
    if len(query.occurrences) == 1:
        for g in group:
            if not cl.bounded(g):
                f = Finding("AGG-C1", (g,), f"grouping attribute {g} is unbounded: unboundedly "
                            "many groups must be held", cl)
                found.append((f, explain(f)))
    else:
        sems = {a.func not in DUP_INSENSITIVE for a in aggs} or {False}
        for bag in sorted(sems):
            qr = spj_of(query, group, bag)
            name = "bag" if bag else "set"
            found += [(f, explain(f, f"Q'_R ({name}) violates {f.condition}: ", "AGG-C1"))
                      for f in check(qr)]
        for agg in aggs:
            if agg.func not in ("MIN", "MAX") or cl.bounded(agg.arg):
                continue
            w = Attr("__W", "X")
            join = Atom(w, "<", agg.arg) if agg.func == "MAX" else Atom(agg.arg, "<", w)
            qr = spj_of(query, group, False, extra=(agg.arg,))
            aug = Spj({**qr.occs, "__W": (w,)}, group, (*qr.atoms, join), False)
            found += [(f, explain(f, f"{agg} over unbounded {agg.arg}: ", "AGG-C3"))
                      for f in check(aug) if f.condition == "C3"]
    for agg in aggs:
        if agg.func in HOLISTIC and not cl.bounded(agg.arg):
            f = Finding("AGG-C2", (agg.arg,), f"holistic {agg} over unbounded {agg.arg}", cl)
            found.append((f, explain(f)))
    verdict.bounded = not found
    verdict.findings = [f for f, _ in found]
    verdict.violations = [v for _, v in found]
    return verdict

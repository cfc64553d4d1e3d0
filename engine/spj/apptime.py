"""Application-time streams: the sound rules of the notes (G1–G3 for bags, E-a or E-b for sets).

Rejections are "not certified", never proofs of unboundedness (the printed theorems of Schiff &
Özçep are wrong in places: Theorem 1's "only if" fails and Theorem 2 is unsound, see
``design/spj-application-time.md`` §3.4, §6 P7/P8). :func:`apptime_brute_force` decides the same
rules by enumerating derived LTO queries; the tests check that both agree.
"""

from __future__ import annotations

from dataclasses import replace

from .checker import check
from .downsets import TimeOrder, downset_synopsis, eb_findings, merged, time_order
from .lto import Finding, Spj, brute_force, spj_of
from .model import TIMESTAMP, Attr, Query
from .rules import aggregate_verdict, spj_verdict
from .synopsis import Synopsis
from .verdict import Verdict, Violation, explain, placement


def _is_ts(query: Query, t: object) -> bool:
    return isinstance(t, Attr) and query.type_of(t) == TIMESTAMP


def _integer_part(query: Query, bag: bool) -> Spj:
    """The query without its timestamp predicates (they only order the streams)."""
    atoms = tuple(a for a in query.atoms if not (_is_ts(query, a.left) or _is_ts(query, a.right)))
    return spj_of(query, query.projection, bag, atoms=atoms)


def _g3(query: Query, m: Spj, order: TimeOrder) -> list[Violation]:
    """G3: an unbounded projected attribute must belong to the latest stream."""
    cl, greatest = m.closure(), order.greatest()
    return [Violation("G3", f"projected attribute {a} is unbounded and {a.occ} is not the "
                      "latest stream", (str(a),))
            for a, b in zip(query.projection, m.proj, strict=True)
            if not cl.bounded(b) and order.groups[a.occ] != greatest]


def _bag_verdict(query: Query, order: TimeOrder) -> Verdict:
    spj = _integer_part(query, True)
    m = merged(spj, order.groups)
    verdict = Verdict(True, spj=spj, closure=spj.closure(), proof="sufficient")
    verdict.notes.append("finite streams (upper-bounded timestamps) are treated as infinite "
                         "(conservative)")
    if len(order.streams) <= 1:
        verdict.notes.append("one (merged) stream: a per-step filter")
        verdict.synopsis = downset_synopsis(m, m.closure(), order)
        return verdict
    joins = Spj(m.occs, (), m.atoms, True)  # projections are G3's
    found = [(f, explain(f, "", {"C2": "G1", "C3": "G2"}[f.condition]))
             for f in check(joins, joins.closure())]
    violations = [v for _, v in found] + _g3(query, m, order)
    if not violations:
        verdict.synopsis = downset_synopsis(m, m.closure(), order)
    else:
        verdict.bounded, verdict.proof = False, "not_certified"
        verdict.violations = violations
        verdict.findings = [replace(f, condition=v.condition) for f, v in found]
    return verdict


def _eb_violation(f: Finding, down: frozenset[str] | None) -> Violation:
    if down is None:
        return explain(f, "rule E-b: ", f.condition)
    names = sorted({r.attr.name for r in f.refs if r.attr.occ == "D"})
    text = (f"rule E-b: the earlier streams {{{', '.join(sorted(down))}}} are compared with "
            f"later ones through unbounded attributes {', '.join(names)} in more than one "
            "equivalence class or in both directions, so their past embeddings cannot be "
            "summarised by one extreme value per key")
    if f.closure is not None:
        text += " (in the derived LTO query with " + ", ".join(
            placement(f.closure, a).replace(str(a), a.name) for a in f.attrs) + ")"
    return Violation("E-b", text, tuple(a.name for a in f.attrs))


def _set_verdict(query: Query, order: TimeOrder) -> Verdict:
    """E-a (timestamps as integers, Arasu Thm 5.10) or else E-b (down-sets)."""
    ea = spj_verdict(query)
    ea.notes.append("rule E-a: timestamps treated as integer attributes (sufficient)")
    if ea.bounded:
        ea.proof = "sufficient"
        return ea
    m = merged(_integer_part(query, False), order.groups)
    cl = m.closure()
    found = eb_findings(m, order)
    if not found:
        return Verdict(True, notes=[
            "rule E-b: every proper down-set of the timestamp order keeps one extreme value "
            "per bounded key (sufficient)"], proof="sufficient", spj=m, closure=cl,
            synopsis=downset_synopsis(m, cl, order))
    ea.proof = "not_certified"
    ea.violations += [_eb_violation(f, d) for f, d in found]
    return ea


def apptime_verdict(query: Query) -> Verdict:
    """Certify boundedness under application time; rejections are 'not certified'."""
    if query.aggregate:
        # E-a: timestamps as integer attributes; ordered inputs are a special case of Arasu's
        v = aggregate_verdict(query)
        v.notes.append("rule E-a: timestamps treated as integer attributes (sufficient)")
        v.proof = "sufficient" if v.bounded else "not_certified"
        return v
    order = time_order(query)
    if not (order.closure.sat and _integer_part(query, True).closure().sat):
        spj = _integer_part(query, not query.distinct)
        return Verdict(True, notes=["predicate unsatisfiable: the output is empty"],
                       proof="sufficient", spj=spj, closure=spj.closure(),
                       synopsis=Synopsis({}, 0, "predicate unsatisfiable: the output is empty"))
    return _set_verdict(query, order) if query.distinct else _bag_verdict(query, order)


def apptime_brute_force(query: Query) -> bool:
    """The rules of :func:`apptime_verdict` for SPJ queries without self-joins, decided by
    enumerating every derived LTO query instead of Fig. 2."""
    order = time_order(query)
    if not (order.closure.sat and _integer_part(query, True).closure().sat):
        return True
    if query.distinct:
        ea = spj_of(query, query.projection, False)
        return not brute_force(ea) or not eb_findings(
            merged(_integer_part(query, False), order.groups), order, exact=True)
    m = merged(_integer_part(query, True), order.groups)
    joins = Spj(m.occs, (), m.atoms, True)
    return len(order.streams) <= 1 or (not brute_force(joins) and not _g3(query, m, order))

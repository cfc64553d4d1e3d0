"""Application-time streams: the sound replacement rules of the notes (G1–G3 for bags, E-a)."""

from __future__ import annotations

from dataclasses import replace

from .checker import check
from .closure import Closure
from .lto import Spj, spj_of
from .model import TIMESTAMP, Atom, Attr, Query
from .rules import aggregate_verdict, spj_verdict
from .verdict import Verdict, Violation, explain


def _is_ts(query: Query, t: object) -> bool:
    return isinstance(t, Attr) and query.type_of(t) == TIMESTAMP


def _groups(query: Query, ts_cl: Closure) -> dict[str, str]:
    """Occurrence -> merged stream: streams with equal timestamps are merged (step 2)."""
    ts = {o: Attr(o, query.timestamps[s]) for o, s in query.occurrences.items()
          if s in query.timestamps}
    group: dict[str, str] = {}
    for o in query.occurrences:
        same = [p for p in query.occurrences if o in ts and p in ts and ts_cl.eq(ts[o], ts[p])]
        group[o] = "+".join(same) if same else o
    return group


def apptime_verdict(query: Query) -> Verdict:
    """Certify boundedness under application time; rejections are 'not certified'."""
    if query.aggregate or query.distinct:
        # E-a: timestamps as integer attributes; ordered inputs are a special case of Arasu's
        v = aggregate_verdict(query) if query.aggregate else spj_verdict(query)
        v.notes.append("rule E-a: timestamps treated as integer attributes (sufficient)")
        v.proof = "sufficient" if v.bounded else "not_certified"
        return v
    ts_attrs = [a for o in query.occurrences for a in query.attrs(o) if _is_ts(query, a)]
    ts_atoms = [a for a in query.atoms if _is_ts(query, a.left) or _is_ts(query, a.right)]
    int_atoms = tuple(a for a in query.atoms if a not in ts_atoms)
    ts_cl = Closure(ts_attrs, [*ts_atoms, *(Atom(-1, "<", t) for t in ts_attrs)])
    spj = spj_of(query, query.projection, True, atoms=int_atoms)
    int_cl = spj.closure()
    verdict = Verdict(True, spj=spj, closure=int_cl, proof="sufficient")
    if not (ts_cl.sat and int_cl.sat):
        verdict.notes.append("predicate unsatisfiable: the output is empty")
        return verdict
    group = _groups(query, ts_cl)
    merged: dict[str, tuple[Attr, ...]] = {}
    for o, attrs in spj.occs.items():
        merged[group[o]] = (*merged.get(group[o], ()), *attrs)
    verdict.notes.append("finite streams (upper-bounded timestamps) are treated as infinite "
                         "(conservative)")
    if len(merged) <= 1:
        verdict.notes.append("one (merged) stream: a per-step filter")
        return verdict
    found = [(f, explain(f, "", {"C2": "G1", "C3": "G2"}[f.condition]))
             for f in check(Spj(merged, (), int_atoms, True), int_cl)]
    ts_of = {group[o]: Attr(o, query.timestamps[s]) for o, s in query.occurrences.items()
             if s in query.timestamps}
    greatest = next((g for g in merged if g in ts_of and all(
        h in ts_of and ts_cl.lt(ts_of[h], ts_of[g]) for h in merged if h != g)), None)
    for a in query.projection:
        if not int_cl.bounded(a) and group[a.occ] != greatest:
            found.append((None, Violation("G3", f"projected attribute {a} is unbounded and "
                                          f"{a.occ} is not the latest stream", (str(a),))))
    verdict.bounded = not found
    verdict.violations = [v for _, v in found]
    verdict.findings = [replace(f, condition=v.condition) for f, v in found if f is not None]
    if found:
        verdict.proof = "not_certified"
    return verdict

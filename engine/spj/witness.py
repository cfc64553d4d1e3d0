"""Adversarial input families (Lemma A.4 style) for unbounded verdicts, and a state counter.

A family for N holds N candidate tuples ``items`` of one stream and N ``probes``. A prefix is any
subset of the items; the probes are suffixes. Unbounded queries give 2^N prefixes that some probe
tells apart (Myhill–Nerode), so any exact evaluator needs Ω(N) memory.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from .closure import INF, Closure
from .lto import Finding
from .model import Atom, Attr, Query
from .reference import evaluate

Event = tuple[str, dict[str, int]]


@dataclass(frozen=True)
class Family:
    """Candidate prefix tuples and distinguishing suffixes for one N."""

    items: list[Event]
    probes: list[list[Event]]

    def prefix(self, mask: int) -> list[Event]:
        return [e for i, e in enumerate(self.items) if mask >> i & 1]


@dataclass(frozen=True)
class Witness:
    """The adversary for a violated condition: ``family(n)`` builds the inputs for N = n."""

    condition: str
    stream: str
    keys: tuple[Attr, ...]
    description: str
    _cl: Closure = field(repr=False, compare=False)
    _query: Query = field(repr=False, compare=False)
    _template: tuple[tuple[int, int], ...] = field(repr=False, compare=False)
    _consts: tuple[int, ...] = field(repr=False, compare=False)

    def family(self, n: int) -> Family:
        fam = _family(self._query, self._cl, self.stream, self.keys, self._template,
                      self._consts, n)
        assert fam is not None, "template verified at construction"
        return fam

    def to_json(self) -> dict:
        return {"condition": self.condition, "stream": self.stream,
                "keys": [str(k) for k in self.keys], "description": self.description}


def _streams(events: Sequence[Event]) -> dict[str, list[dict[str, int]]]:
    out: dict[str, list[dict[str, int]]] = {}
    for stream, row in events:
        out.setdefault(stream, []).append(row)
    return out


def _freeze(result: Counter | set) -> frozenset:
    return frozenset(result.items()) if isinstance(result, Counter) else frozenset(result)


def states(query: Query, fam: Family) -> int:
    """Distinct prefixes (subsets of the items) that the probes tell apart, via the reference."""
    seen = set()
    for mask in range(1 << len(fam.items)):
        prefix = fam.prefix(mask)
        before = evaluate(query, _streams(prefix))
        vec = [_freeze(before)] if query.aggregate else []  # the held answer is observable
        for probe in fam.probes:
            after = evaluate(query, _streams(prefix + probe))
            if not query.aggregate:
                after = after - before
            vec.append(_freeze(after))
        seen.add(tuple(vec))
    return len(seen)


def _order(cl: Closure, keys: list[Attr]) -> list[Attr]:
    """A linear extension of the closure's order on the key classes."""
    rest, out = list(keys), []
    while rest:
        low = next(a for a in rest if not any(cl.le(b, a) and not cl.eq(a, b)
                                              for b in rest if b != a))
        out.append(low)
        rest.remove(low)
    return out


def _family(query: Query, cl: Closure, stream: str, keys: tuple[Attr, ...],
            template: tuple[tuple[int, int], ...], consts: tuple[int, ...],
            n: int) -> Family | None:
    kmin, kmax = (consts[0], consts[-1]) if consts else (0, 0)
    g = 2 * (len(cl.attrs) + 2)
    w = g * (len(keys) + 2)
    high = [k for k in keys if cl.upper(k) == INF]
    low = [k for k in keys if cl.upper(k) < INF]
    rank = {k: r for r, k in enumerate(_order(cl, high))}
    rank |= {k: r for r, k in enumerate(reversed(_order(cl, low)))}
    envs = []
    for i in range(1, n + 1):
        pins = []
        for key, (block, slope) in zip(keys, template, strict=True):
            pos = w + block * (n + 2) * w + (i if slope > 0 else n + 1 - i) * w + rank[key] * g
            pins.append(Atom(key, "=", kmax + pos if key in high else kmin - pos))
        pinned = cl.extend(pins)
        if not pinned.sat:
            return None
        vals = [p.right for p in pins] + [kmin, kmax]
        env = None
        for lo, hi in ((min(vals) - w, max(vals) + w), (kmin - (2 * n + 6) * w,
                                                         kmax + (2 * n + 6) * w)):
            box = pinned.extend([b for a in cl.attrs for b in (Atom(lo, "<", a),
                                                               Atom(a, "<", hi))])
            if box.sat:
                env = {a: int(box.upper(a)) for a in cl.attrs}
                break
        if env is None:
            return None
        envs.append(env)

    def row(o: str, env: dict[Attr, int]) -> Event:
        base = query.occurrences[o]
        return base, {c: env.get(Attr(o, c), 0) for c in query.columns[base]}

    others = [o for o in query.occurrences if o != stream]
    items = [row(stream, e) for e in envs]
    probes = [[row(o, e) for o in others] if others else [row(stream, e)] for e in envs]
    return Family(items, probes)


def build(query: Query, finding: Finding, consts: tuple[int, ...],
          condition: str) -> Witness | None:
    """Search block/slope templates for the key classes; keep the first that separates N=3."""
    cl = finding.closure
    if cl is None:
        return None
    if finding.refs:
        stream = finding.refs[0].attr.occ
        cands = [a for r in finding.refs for a in (r.attr, r.partner)]
    else:
        stream, cands = finding.attrs[0].occ, [finding.attrs[0]]
    keys: list[Attr] = []
    for a in cands:
        if a.occ in query.occurrences and not any(cl.eq(a, k) for k in keys):
            keys.append(a)
    if stream not in query.occurrences:
        return None
    templates = sorted(itertools.product(itertools.product((0, 1), (1, -1)), repeat=len(keys)),
                       key=lambda t: (sum(b for b, _ in t), sum(s < 0 for _, s in t)))
    for template in templates:
        fam = _family(query, cl, stream, tuple(keys), template, consts, 3)
        if fam is not None and states(query, fam) == 8:
            desc = (f"any subset of N {query.occurrences[stream]} tuples that differ in "
                    f"{', '.join(map(str, keys))}; probe k sends tuple k's partners on the other "
                    "streams, and the answers differ for all 2^N subsets")
            return Witness(condition, stream, tuple(keys), desc, cl, query,
                           template, consts)
    return None

"""Synopsis layout and memory bound for bounded queries (§7 buckets, §8.2 group state)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .closure import Closure
from .lto import Spj
from .model import HOLISTIC, Aggregate, Attr


@dataclass(frozen=True)
class Synopsis:
    """Per-stream bucket layout and a bound on memory units (values and counts)."""

    layout: dict[str, dict]
    units: int
    note: str

    def to_json(self) -> dict:
        return {"layout": self.layout, "units": self.units, "note": self.note}


def _range(cl: Closure, a: Attr) -> int:
    return int(cl.upper(a) - cl.lower(a) + 1)


def buckets(cl: Closure, a: Attr, consts: tuple[int, ...]) -> int:
    """How many of the ranges (<kmin), k in [kmin, kmax], (>kmax) the attribute can fall into."""
    if not consts:
        return 1
    kmin, kmax = consts[0], consts[-1]
    lo, hi = cl.lower(a), cl.upper(a)
    inner = max(0, int(min(hi, kmax) - max(lo, kmin) + 1)) if hi >= kmin and lo <= kmax else 0
    return inner + (lo < kmin) + (hi > kmax)


def spj_synopsis(spj: Spj, cl: Closure) -> Synopsis:
    """Bag: (representative, count) per bucket; set: ≤ 2 representatives per bucket + emitted."""
    if not cl.sat:
        return Synopsis({}, 0, "predicate unsatisfiable: the output is always empty")
    n = len(spj.occs)
    emitted = 0
    if not spj.bag:
        emitted = len(spj.proj) * math.prod(_range(cl, a) for a in spj.proj) if spj.proj else 1
    if n == 1:
        note = "per-tuple filter" if spj.bag else "per-tuple filter plus the emitted set"
        return Synopsis({}, emitted, note)
    consts, layout, units = spj.constants, {}, emitted
    for occ, attrs in spj.occs.items():
        nb = math.prod(buckets(cl, a, consts) for a in attrs)
        # set: up to two representatives; one that holds no attribute is a unit-size flag
        per = len(attrs) + 1 if spj.bag else max(2 * len(attrs), 1)
        layout[occ] = {"attributes": [str(a) for a in attrs], "buckets": nb,
                       "entry": "(representative, count)" if spj.bag else
                       "t_max / t_min / t_first representatives"}
        units += nb * per
    note = "bucket synopses" + ("" if spj.bag else f" plus an emitted set of ≤ {emitted} units")
    return Synopsis(layout, units, note)


def aggregate_synopsis(spj: Spj, cl: Closure, group_by: tuple[Attr, ...],
                       aggs: tuple[Aggregate, ...]) -> Synopsis:
    """Group map with per-group partial aggregates, plus bag buckets for several streams."""
    if not cl.sat:
        return Synopsis({}, 0, "predicate unsatisfiable: the answer never changes")
    groups = math.prod(_range(cl, g) for g in group_by)
    per = len(group_by)
    for agg in aggs:
        if agg.func in HOLISTIC:
            per += 2 * _range(cl, agg.arg)  # value -> count map over a bounded argument
        else:
            per += 2 if agg.func == "AVG" else 1
    units = groups * per
    layout: dict[str, dict] = {"groups": {"count": groups, "units_per_group": per}}
    if len(spj.occs) > 1:
        for occ, attrs in spj.occs.items():
            nb = math.prod(buckets(cl, a, spj.constants) for a in attrs)
            layout[occ] = {"attributes": [str(a) for a in attrs], "buckets": nb,
                           "entry": "(representative, count, partial aggregates)"}
            units += nb * (len(attrs) + 1 + len(aggs))
    return Synopsis(layout, units, "group map with partial aggregates")

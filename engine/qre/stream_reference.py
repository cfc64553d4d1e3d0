"""The reference a keyed QRE operator's replay is checked against: per key, the arrival-order
rejection (a missing field, or an event the query cannot evaluate: ``item_checks``) and
lateness rules, then a naive evaluator over the on-time events."""

from __future__ import annotations

import pandas as pd

from ..operator import SEQ, TIME
from .dispatch import EMITTED, json_of, value_of
from .evaluator import evaluate
from .events import items_of, rejection
from .item_checks import ItemCheck
from .query_spec import QreSpec
from .reference import reference_poly
from .text import parse
from .values import Outcome


def _row(key_column: str, key: object, t: int, seq: int, outcome: Outcome) -> dict:
    return {key_column: key, "event_time": t, "arrival_seq": seq, "value": value_of(outcome),
            "value_json": json_of(outcome)}


#: Keys with at most this many on-time events are checked with the polynomial reference (about
#: 0.2 s at 100 events for the episode query; it grows with the cube of the count).
POLY_REFERENCE_LIMIT = 100


def qre_reference(events: pd.DataFrame, spec: QreSpec
                  ) -> tuple[pd.DataFrame, list[int], list[int]]:
    """Per key: rejected and late events by the arrival-order rule, then the polynomial reference
    (:func:`~engine.qre.reference.reference_poly`, O(n^3)) over the on-time events in (event
    time, arrival) order, or for keys with more than :data:`POLY_REFERENCE_LIMIT` of them the
    derivative evaluator from scratch; projected by the output mode. Returns (output, late
    arrival seqs, rejected arrival seqs)."""
    term = parse(spec.text)
    checks = ItemCheck(term, spec.column_types())
    items = items_of(events, spec)
    rows, late, rejected = [], [], []
    by_key: dict[object, list] = {}
    for i, (key, t, seq) in enumerate(zip(events[spec.key], events[TIME], events[SEQ],
                                          strict=True)):
        by_key.setdefault(key, []).append((int(seq), int(t), items[i]))
    for key, evs in by_key.items():
        evs.sort()
        on_time, max_t = [], None
        for seq, t, item in evs:
            if rejection(term.fields, item) or checks.problem(item, everything=True):
                rejected.append(seq)
                continue
            if max_t is not None and t < max_t - spec.lateness_us:
                late.append(seq)
                continue
            max_t = t if max_t is None else max(max_t, t)
            on_time.append((t, seq, item))
        on_time.sort(key=lambda e: (e[0], e[1]))
        naive = reference_poly if len(on_time) <= POLY_REFERENCE_LIMIT else evaluate
        outcomes = naive(term, [e[2] for e in on_time])[1:]
        if spec.output == "final":
            if on_time and outcomes[-1].kind in EMITTED:
                t, seq, _ = on_time[-1]
                rows.append(_row(spec.key, key, t, seq, outcomes[-1]))
            continue
        previous = None
        for (t, seq, _), outcome in zip(on_time, outcomes, strict=True):
            if outcome.kind not in EMITTED:
                continue
            row = _row(spec.key, key, t, seq, outcome)
            if spec.output == "changes" and row["value_json"] == previous:
                continue
            previous = row["value_json"]
            rows.append(row)
    columns = [spec.key, "event_time", "arrival_seq", "value", "value_json"]
    return pd.DataFrame(rows, columns=columns), sorted(late), sorted(rejected)


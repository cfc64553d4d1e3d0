"""Applying a batch to the state: counted buckets (bag, full history) or set representatives.

Both strategies join the batch's new entries with the stored ones (:mod:`engine.spj.join`) and
feed the combinations to a sink. :class:`Batches` is the only writer of stores and buckets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .join import join
from .lto import Spj, refs
from .model import Atom
from .plan import REPS, Event, Plan
from .sinks import Sink
from .state import Bucket, Entry, SpjState, Store

Refs = tuple[tuple[int, ...], tuple[int, ...]]  # MaxRef and MinRef positions of a bucket


class Batches:
    """Runs batches of one compiled query against its state."""

    def __init__(self, plan: Plan, full_history: bool):
        self.plan, self.full_history = plan, full_history
        self._ref_cache: dict[tuple[int, tuple], Refs | None] = {}

    def init(self) -> SpjState:
        """The empty state."""
        p, n = self.plan, len(self.plan.occs)
        return SpjState([Store(p.lookups[i]) for i in range(n)] if p.keep else [],
                        [[] for _ in range(n)] if self.full_history else [],
                        [{} for _ in range(n)] if p.path == REPS else [])

    def step(self, state: SpjState, batch: Sequence[Event], sink: Sink) -> None:
        """Apply ``batch`` (rows already checked) to ``state``, feeding the new results to
        ``sink``."""
        if self.plan.path == REPS:
            self._step_reps(state, batch, sink)
        else:
            self._step_counted(state, batch, sink)

    def load_rows(self, state: SpjState, i: int, rows: Sequence[tuple]) -> None:
        """Full history: store occurrence ``i``'s ``rows`` (already filtered) without output."""
        delta = Store()
        for t in rows:
            state.rows[i].append(t)
            self._add(delta, i, t)
        self._absorb(state.stores[i], delta, i)

    # -- bag buckets and full history --------------------------------------------------------------
    def _step_counted(self, state: SpjState, batch: Sequence[Event], sink: Sink) -> None:
        """Telescoping delta join: Δ_i ⋈ (S_j, j < i, with the batch) ⋈ (S_j, j > i, without)."""
        plan = self.plan
        deltas = [Store() for _ in plan.occs]
        for i, t in plan.tuples(batch):
            if self.full_history:
                state.rows[i].append(t)
            self._add(deltas[i], i, t)
        env: list[Any] = [None] * len(plan.slot)
        for i, delta in enumerate(deltas):
            for entry in delta.entries.values():
                join(plan, i, entry, env, state.stores, sink)
            if plan.keep:
                self._absorb(state.stores[i], delta, i)

    def _add(self, delta: Store, i: int, t: tuple) -> None:
        plan = self.plan
        key = plan.bucket(i, t) if plan.bucketed else t
        e = delta.entries.get(key)
        if e is None:
            e = delta.entries[key] = Entry(t, 0, {k: a.empty() for k, a in plan.agg_on[i]}
                                           if plan.bucketed else None)
        e.count += 1
        if e.parts is not None:
            for k, a in plan.agg_on[i]:
                e.parts[k] = a.merge(e.parts[k], a.part(t[a.pos], 1), 1, False)

    def _absorb(self, store: Store, delta: Store, i: int) -> None:
        for key, d in delta.entries.items():
            e = store.entries.get(key)
            if e is None:
                store.add(key, d)
                continue
            e.count += d.count
            if e.parts is not None:
                for k, a in self.plan.agg_on[i]:
                    e.parts[k] = a.merge(e.parts[k], d.parts[k], 1, False)

    # -- set representatives -----------------------------------------------------------------------
    def _step_reps(self, state: SpjState, batch: Sequence[Event], sink: Sink) -> None:
        """Set synopses: update representatives, then join the changed ones with all others."""
        plan = self.plan
        changed: dict[tuple[int, tuple], None] = {}
        for i, t in plan.tuples(batch):
            b = plan.bucket(i, t)
            refs_b = self._refs(i, b)
            if refs_b is not None and self._offer(state.reps[i].setdefault(b, Bucket()), i, t,
                                                  *refs_b):
                changed[(i, b)] = None
        if not changed:
            return
        views = [Store(plan.lookups[j]) for j in range(len(plan.occs))]
        for j, buckets in enumerate(state.reps):
            for b, bucket in buckets.items():
                for role, rep in bucket.roles.items():
                    views[j].add((b, role), Entry(rep, 1, bucket.parts))
        env: list[Any] = [None] * len(plan.slot)
        for i, b in changed:
            bucket = state.reps[i][b]
            for rep in bucket.roles.values():
                join(plan, i, Entry(rep, 1, bucket.parts), env, views, sink)

    def _refs(self, i: int, b: tuple) -> Refs | None:
        """MaxRef/MinRef positions of bucket ``b`` (Def 7.3), None if the bucket cannot join."""
        if (i, b) not in self._ref_cache:
            self._ref_cache[(i, b)] = self._bucket_refs(i, b)
        return self._ref_cache[(i, b)]

    def _bucket_refs(self, i: int, b: tuple) -> Refs | None:
        plan = self.plan
        pins: list[Atom] = []
        consts = plan.consts
        for (p, isint), c in zip(plan.keys[i], b, strict=True):
            a = plan.cols[i][p]
            if isint and consts:
                pins.append(Atom(a, "<", consts[0]) if c < consts[0] else
                            Atom(consts[-1], "<", a) if c > consts[-1] else Atom(a, "=", c))
        cl = plan.closure.extend(pins)
        if not cl.sat:
            return None
        spj = Spj(plan.spj.occs, plan.spj.proj, (*plan.spj.atoms, *pins), False)
        mine = [r for r in refs(spj, cl) if r.attr.occ == plan.occs[i]]
        pos = plan.cols[i].index
        return (tuple(sorted({pos(r.attr) for r in mine if r.role == "max"})),
                tuple(sorted({pos(r.attr) for r in mine if r.role == "min"})))

    def _offer(self, bucket: Bucket, i: int, t: tuple, mx: tuple[int, ...],
               mn: tuple[int, ...]) -> bool:
        """Keep ``t`` if it beats the bucket's representatives; fold its partial aggregates."""
        roles, changed = bucket.roles, False
        if mx and ("max" not in roles or min(t[p] for p in mx) > min(roles["max"][p] for p in mx)):
            roles["max"], changed = t, True
        if mn and ("min" not in roles or max(t[p] for p in mn) < max(roles["min"][p] for p in mn)):
            roles["min"], changed = t, True
        if not mx and not mn and "first" not in roles:
            roles["first"], changed = t, True
        for k, a in self.plan.agg_on[i]:
            changed |= a.fold(bucket.parts, k, t[a.pos])
        return changed

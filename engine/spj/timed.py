"""The down-set engine: SPJ queries under application time, certified by rules G1–G3 (bag) or
E-b (set).

Input arrives in timestamp order (all streams synchronised; ``design/spj-application-time.md``
§1.3); tuples of one timestamp form a *step*. For every proper down-set D of the timestamp order
(``engine/spj/downsets.py``) the state keeps the embeddings of D among the tuples of the finished
steps, grouped by the §7 bucket of D's interface attributes (those projected or compared with a
stream outside D): one representative and a count per bucket (bag). Rules G1–G3 make every join
with a later stream decided by the bucket, so the representative stands for all its embeddings.
Under rule E-b (set) the unbounded interface attributes of D form one class compared with later
streams in one direction, so a bucket keeps the extreme representatives of Def 7.3 instead: the
embedding maximising the least MaxRef value and the one minimising the greatest MinRef value
(or the first one), which join whenever any embedding of the bucket joins.

An embedding of D whose latest tuples are at step t consists of tuples at t of a set M of
maximal streams of D and an embedding of D − M from earlier steps (notes §4.4). The current
step's tuples are kept until a later timestamp arrives (at most the per-timestamp bound per
stream); then they are folded into the summaries. Each batch reports the result tuples the
current step added: the embeddings of all streams through the current step, now minus before.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from .closure import Closure
from .downsets import DOWN, TimeOrder, interface, rename, time_order
from .errors import SpjError
from .lto import Spj, refs, spj_of
from .model import OTHER, TIMESTAMP, Atom, Attr, Query
from .plan import Event, Filter, coord, make_filter
from .state import Bucket, Entry

Down = frozenset[str]
Env = dict[Attr, Any]


class TimedState:
    """``now``: timestamp of the current step (None before any tuple); ``cache``: occurrence ->
    the current step's tuples that passed its filters; ``summaries``: proper down-set -> bucket
    -> representative (values of the key attributes) and count (bag) or representatives by role
    (set); ``emitted``: set rows."""

    __slots__ = ("cache", "emitted", "now", "summaries")

    def __init__(self, now: int | None, cache: dict[str, list[tuple]],
                 summaries: dict[Down, dict[tuple, Entry | Bucket]], emitted: set[tuple]):
        self.now, self.cache, self.summaries, self.emitted = now, cache, summaries, emitted


def _holds(atom: Atom, env: Env) -> bool:
    a = env[atom.left] if isinstance(atom.left, Attr) else atom.left
    b = env[atom.right] if isinstance(atom.right, Attr) else atom.right
    if a is None or b is None:
        return False
    return a < b if atom.op == "<" else a <= b if atom.op == "<=" else a == b


class DownSetEngine:
    """Runs one application-time query on down-set summaries (see the module docstring)."""

    def __init__(self, query: Query):
        missing = [o for o, s in query.occurrences.items() if s not in query.timestamps]
        if missing:
            raise SpjError(f"the down-set engine needs a timestamp on every stream; "
                           f"{', '.join(missing)} has none")
        self.query = query
        self.order: TimeOrder = time_order(query)
        full = spj_of(query, query.projection, True)
        self.closure: Closure = full.closure()
        self.ts = {o: Attr(o, query.timestamps[s]) for o, s in query.occurrences.items()}
        self.occs = list(query.occurrences)
        self.cols = {o: tuple(dict.fromkeys((*full.occs[o], self.ts[o]))) for o in self.occs}
        compared = {t for a in full.atoms for t in (a.left, a.right) if isinstance(t, Attr)}
        self.filters: dict[str, Filter] = {
            o: make_filter(self.closure, self.cols[o], compared,
                           [query.type_of(a) != OTHER for a in self.cols[o]])
            for o in self.occs}
        self.atoms = full.atoms
        ints = spj_of(query, query.projection, True, atoms=tuple(
            a for a in full.atoms if not any(isinstance(t, Attr) and query.type_of(t) ==
                                             TIMESTAMP for t in (a.left, a.right))))
        self.consts = ints.constants
        self.all: Down = frozenset(self.order.streams)
        self.downs: list[Down] = self.order.down_sets()
        int_cl = ints.closure()
        self.keys = {d: tuple(interface(ints, int_cl, d, self.order.groups)) for d in self.downs}
        self.members = {g: [o for o in self.occs if self.order.groups[o] == g]
                        for g in self.order.streams}
        self.bag = not query.distinct
        self._ints = ints
        self._ref_cache: dict[tuple[Down, tuple], tuple[tuple[int, ...], tuple[int, ...]]] = {}

    # -- state -------------------------------------------------------------------------------
    def init(self) -> TimedState:
        """The empty state."""
        return TimedState(None, {o: [] for o in self.occs}, {d: {} for d in self.downs}, set())

    def size(self, state: TimedState) -> int:
        """Stored summary entries (representatives) and emitted rows (the current step's
        tuples, at most the per-timestamp bound per stream, are not counted)."""
        if self.bag:
            return sum(len(s) for s in state.summaries.values()) + len(state.emitted)
        return sum(len(b.roles) for s in state.summaries.values()
                   for b in s.values()) + len(state.emitted)

    # -- batches -----------------------------------------------------------------------------
    def check_order(self, state: TimedState, batch: Sequence[Event]) -> None:
        """Refuse a batch whose timestamps are missing or go back in time."""
        now = state.now
        for stream, row in batch:
            col = self.query.timestamps.get(stream)
            if col is None or stream not in self.query.occurrences.values():
                continue
            ts = row.get(col)
            if not isinstance(ts, int) or isinstance(ts, bool):
                raise SpjError(f"stream {stream!r}, column {col!r}: timestamp {ts!r} is not an "
                               "integer tick (application time needs one on every row)")
            if now is not None and ts < now:
                raise SpjError(f"stream {stream!r}, column {col!r}: timestamp {ts} is earlier "
                               f"than {now}; application-time input must arrive in timestamp "
                               "order")
            now = ts

    def step(self, state: TimedState, batch: Sequence[Event]) -> Counter:
        """Apply a checked batch; returns the projected result tuples it added, with counts
        (bag), or every result tuple of the steps it touched (set: the caller drops those
        emitted before)."""
        out: Counter = Counter()
        mine = [e for e in batch if e[0] in self.query.timestamps
                and e[0] in self.query.occurrences.values()]
        for ts, run in itertools.groupby(mine, key=lambda e: e[1][self.query.timestamps[e[0]]]):
            if state.now is not None and ts > state.now:
                self._fold(state)
            state.now = ts
            before = self._results(state) if self.bag else Counter()
            for stream, row in run:
                for o in self.occs:
                    if self.query.occurrences[o] == stream:
                        t = tuple(row[a.name] for a in self.cols[o])
                        if self.filters[o].passes(t):
                            state.cache[o].append(t)
            out += self._results(state) - before
        return out

    def _results(self, state: TimedState) -> Counter:
        out: Counter = Counter()
        for env, n in self._extend(self.all, state):
            out[tuple(env[a] for a in self.query.projection)] += n
        return out

    def _fold(self, state: TimedState) -> None:
        """Close the current step: add its embeddings of every proper down-set."""
        new = {d: list(self._extend(d, state)) for d in self.downs}
        for d, found in new.items():
            summary = state.summaries[d]
            for env, n in found:
                rep = tuple(env[a] for a in self.keys[d])
                key = tuple(coord(v, self.consts) if self.query.type_of(a) != OTHER else v
                            for a, v in zip(self.keys[d], rep, strict=True))
                e = summary.get(key)
                if not self.bag:
                    self._offer(summary.setdefault(key, Bucket()), rep, *self._refs(d, key))
                elif e is None:
                    summary[key] = Entry(rep, n, None)
                else:
                    e.count += n
        for tuples in state.cache.values():
            tuples.clear()

    # -- embeddings --------------------------------------------------------------------------
    def _step_tuples(self, state: TimedState, g: str) -> list[Env]:
        """The current step's tuples of merged stream ``g``: its members' tuples joined."""
        members = self.members[g]
        inside = [a for a in self.atoms if all(
            t.occ in members for t in (a.left, a.right) if isinstance(t, Attr))]
        out = []
        for combo in itertools.product(*(state.cache[o] for o in members)):
            env: Env = {}
            for o, t in zip(members, combo, strict=True):
                env.update(zip(self.cols[o], t, strict=True))
            if all(_holds(a, env) for a in inside):
                out.append(env)
        return out

    def _extend(self, d: Down, state: TimedState) -> Iterator[tuple[Env, int]]:
        """Embeddings of ``d`` whose latest tuples are the current step's (notes §4.4)."""
        now = state.now if state.now is not None else 0
        tops = [g for g in d if not any(g in self.order.earlier[h] for h in d)]
        step = {g: self._step_tuples(state, g) for g in tops}
        for k in range(1, len(tops) + 1):
            for m in itertools.combinations(sorted(tops), k):
                if not all(step[g] for g in m):
                    continue
                rest = d - set(m)
                occ_m = {o for g in m for o in self.members[g]}
                occ_d = {o for g in d for o in self.members[g]}
                checks = [a for a in self.atoms if self._crosses(a, occ_m, occ_d, m)]
                earlier = {self.ts[o]: now - 1 for g in rest for o in self.members[g]}
                base = self._entries(state.summaries[rest]) if rest else [Entry((), 1, None)]
                for entry in base:
                    known = dict(zip(self.keys[rest], entry.rep, strict=True)) if rest else {}
                    for combo in itertools.product(*(step[g] for g in m)):
                        env = {**known, **earlier}
                        for part in combo:
                            env.update(part)
                        if all(_holds(a, env) for a in checks):
                            yield env, entry.count

    def _entries(self, summary: dict[tuple, Entry | Bucket]) -> list[Entry]:
        if self.bag:
            return list(summary.values())
        return [Entry(rep, 1, None) for b in summary.values() for rep in b.roles.values()]

    def _refs(self, d: Down, key: tuple) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Positions (in ``keys[d]``) of the MaxRef and MinRef attributes of bucket ``key`` of
        ``d`` against the later streams (Def 7.3 on D merged against the rest)."""
        if (d, key) not in self._ref_cache:
            pins: list[Atom] = []
            consts = self.consts
            for a, c in zip(self.keys[d], key, strict=True):
                if self.query.type_of(a) != OTHER and consts:
                    pins.append(Atom(a, "<", consts[0]) if c < consts[0] else
                                Atom(consts[-1], "<", a) if c > consts[-1] else Atom(a, "=", c))
            ints = self._ints
            pinned = Spj(ints.occs, ints.proj, (*ints.atoms, *pins), False)
            groups = self.order.groups
            split = rename(pinned, lambda a: Attr(DOWN if groups[a.occ] in d else "R", str(a)))
            cl = split.closure()
            pos = {str(a): p for p, a in enumerate(self.keys[d])}
            mine = [r for r in refs(split, cl) if r.attr.occ == DOWN] if cl.sat else []
            self._ref_cache[(d, key)] = (
                tuple(sorted({pos[r.attr.name] for r in mine if r.role == "max"})),
                tuple(sorted({pos[r.attr.name] for r in mine if r.role == "min"})))
        return self._ref_cache[(d, key)]

    @staticmethod
    def _offer(bucket: Bucket, t: tuple, mx: tuple[int, ...], mn: tuple[int, ...]) -> None:
        """Keep ``t`` if it beats the bucket's extreme representatives (Def 7.3)."""
        roles = bucket.roles
        if mx and ("max" not in roles or min(t[p] for p in mx) > min(roles["max"][p] for p in mx)):
            roles["max"] = t
        if mn and ("min" not in roles or max(t[p] for p in mn) < max(roles["min"][p] for p in mn)):
            roles["min"] = t
        if not mx and not mn and "first" not in roles:
            roles["first"] = t

    def _crosses(self, atom: Atom, occ_m: set[str], occ_d: set[str], m: tuple[str, ...]) -> bool:
        """Whether ``atom`` is decided when the tuples of ``m`` join: within ``d``, touching
        ``m``, and not inside one merged stream of ``m`` (checked with its step tuples)."""
        occs = {t.occ for t in (atom.left, atom.right) if isinstance(t, Attr)}
        if not occs or not occs <= occ_d or not occs & occ_m:
            return False
        return not any(occs <= set(self.members[g]) for g in m)

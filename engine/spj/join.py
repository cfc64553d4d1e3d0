"""The join walk: extend one entry to every combination with the other occurrences' entries."""

from __future__ import annotations

from collections.abc import Sequence

from .plan import JoinStep, Plan
from .sinks import Sink
from .state import Entry, Store


def join(plan: Plan, i: int, entry: Entry, env: list, views: Sequence[Store], sink: Sink) -> None:
    """Feed ``sink`` every combination of occurrence ``i``'s ``entry`` with entries of the other
    occurrences in ``views`` that satisfies the join atoms (``env``: a scratch slot list)."""
    for slot, p in plan.starts[i]:
        env[slot] = entry.rep[p]
    chosen: list[Entry | None] = [None] * len(plan.occs)
    chosen[i] = entry
    prune = plan.ready[i] if sink.prunes else None
    _walk(plan.joins[i], 0, env, chosen, entry.count, views, sink, prune)


def _walk(steps: tuple[JoinStep, ...], k: int, env: list, chosen: list, mult: int,
          views: Sequence[Store], sink: Sink, prune: int | None) -> None:
    if prune is not None and k >= prune and sink.known(env):
        return
    if k == len(steps):
        sink.add(env, chosen, mult)
        return
    st = steps[k]
    view = views[st.occ]
    cands = view.find(st.key, tuple(env[s] for s in st.src)) if st.key else \
        view.entries.values()
    for e in cands:
        rep = e.rep
        for slot, p in st.bind:
            env[slot] = rep[p]
        if all(c(env) for c in st.checks):
            chosen[st.occ] = e
            _walk(steps, k + 1, env, chosen, mult * e.count, views, sink, prune)

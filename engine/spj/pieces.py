"""Set self-joins that are bounded only per derived LTO query (§8.1, notes §6.1).

Thm 5.10 is only sufficient for set queries with self-joins: a query may need the removal of
redundant occurrences (Def 8.2) separately in each derived LTO query. The answer is then the
union of the pieces (Thm 5.3): each derived LTO query, with its redundant occurrences removed,
runs on its own set synopsis (its filters route every tuple to the pieces it belongs to), and all
pieces share one emitted set. Pieces whose reduced queries are equal are run once.
"""

from __future__ import annotations

from collections.abc import Sequence

from .batches import Batches
from .lto import Spj, derived_ltos
from .model import Query
from .plan import Event, Plan
from .selfjoin import facts, remove_redundant
from .sinks import SetSink
from .state import SpjState, size
from .synopsis import spj_synopsis
from .values import order_key


class PiecesState:
    """``pieces``: one set-synopsis state per piece; ``emitted``: the rows seen so far (the
    pieces' states share this set)."""

    __slots__ = ("emitted", "pieces")

    def __init__(self, pieces: list[SpjState], emitted: set[tuple]):
        self.pieces, self.emitted = pieces, emitted


class PieceEngine:
    """Runs one set self-join as the union of its reduced derived LTO queries."""

    def __init__(self, query: Query, spj: Spj):
        bases = {o: query.occurrences[o] for o in spj.occs}
        reduced: dict[tuple, tuple[Spj, object]] = {}
        for cl in derived_ltos(spj):
            piece, _ = remove_redundant(Spj(spj.occs, spj.proj, facts(spj, cl), False), bases)
            pcl = piece.closure()
            sig = (tuple(piece.occs), piece.proj, frozenset(piece.atoms))
            if pcl.sat and sig not in reduced:
                reduced[sig] = (piece, pcl)
        self.batches = [Batches(Plan(query, p, c, "set", False), False)
                        for p, c in reduced.values()]
        #: A bound on the stored entries: the sum of the pieces' synopsis bounds.
        self.units = sum(spj_synopsis(p, c).units for p, c in reduced.values())

    def init(self) -> PiecesState:
        """The empty state (every piece's state holds the shared emitted set)."""
        emitted: set[tuple] = set()
        pieces = []
        for b in self.batches:
            s = b.init()
            s.emitted = emitted
            pieces.append(s)
        return PiecesState(pieces, emitted)

    def step(self, state: PiecesState, batch: Sequence[Event], columns: Sequence[str],
             consts: tuple) -> list[dict]:
        """Apply a checked batch to every piece; the rows no piece emitted before, sorted."""
        rows: list[dict] = []
        for b, s in zip(self.batches, state.pieces, strict=True):
            sink = SetSink(columns, b.plan.proj_slots, state.emitted, consts)
            b.step(s, batch, sink)
            rows += sink.rows()
        return sorted(rows, key=lambda r: order_key(r.values()))

    def size(self, state: PiecesState) -> int:
        """Representatives over all pieces plus the emitted rows (counted once)."""
        return len(state.emitted) + sum(size(s, [], False) - len(s.emitted)
                                        for s in state.pieces)

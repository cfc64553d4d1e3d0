"""Incremental evaluation of SPJ(+aggregate) continuous queries on bounded synopses.

``SpjExecutor(sql, schemas)`` runs a query that ``analyze`` finds bounded on the synopses of the
design notes (``design/spj-bounded-memory.md`` §5.2, §6.2): the state has a size fixed by the
query, however long the input. Unbounded queries are refused with the analyser's explanation
unless ``allow_unbounded=True``, which runs them in ``"full-history"`` mode (every tuple kept,
hash-indexed on the equality-joined attributes; the state grows with the input).

Events are ``(stream, row)`` pairs in arrival order; ``step(state, events)`` processes one batch
and returns the state (updated in place) and the batch's *output increment*:

- bag SPJ (``SELECT``): one row per distinct projected value, with a ``count`` column saying how
  many new result tuples of that value the batch added; summing the counts over all batches gives
  the reference multiset.
- set SPJ (``SELECT DISTINCT``): each new distinct result row once, in the batch where it first
  appears; the union over all batches is the reference set.
- aggregates: one row (group columns and aggregate values, in SELECT order) for every group whose
  values changed in the batch, with the values at the end of the batch; a query without GROUP BY
  reports its single row in the first batch. The latest row per group is the reference answer.
  ``AVG`` and ``MEDIAN`` are exact :class:`fractions.Fraction` values, as in the reference.

Rows of an increment are sorted by their values. Column names are ``str`` of the SELECT items
(``S.A``, ``COUNT(*)``, ``SUM(S.B)``; repeats get ``#2``, ``#3``), see ``output_columns``.

NULL (``None``) never satisfies a comparison, including ``NULL = NULL`` (SQL semantics): a tuple
with NULL in an attribute of the WHERE clause joins nothing; aggregates skip NULL arguments. A
row that lacks a column the query reads, or holds a value of the wrong type (integers and
timestamps are Python ``int`` ticks), raises :class:`SpjError`; ``check`` gives the reason first.

The work is split by concern: :mod:`.modes` picks synopses or the full history, :mod:`.plan`
compiles the query, :mod:`.batches` and :mod:`.join` apply a batch to the :mod:`.state`,
:mod:`.sinks` build the increment, :mod:`.aggregates` hold the aggregate algebra and
:mod:`.codec` owns the byte format (canonical: equal states encode identically).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence

from .analysis import Analysis, analyze
from .batches import Batches
from .codec import PiecesFormat, StateFormat, TimedFormat
from .errors import SpjError
from .model import Query
from .modes import FULL_HISTORY, SYNOPSIS, DownSets, PerLto, choose_mode, full_spj, synopsis_source
from .parse import Schemas
from .pieces import PieceEngine, PiecesState
from .plan import REPS, Event, Plan, Row
from .sinks import AggSink, BagSink, SetSink, Sink
from .state import SpjState, size
from .timed import DownSetEngine, TimedState
from .values import EXPECTED, fits, value_kind


def _names(query: Query) -> list[str]:
    seen: Counter = Counter()
    out = []
    for o in query.output:
        seen[str(o)] += 1
        out.append(str(o) if seen[str(o)] == 1 else f"{o}#{seen[str(o)]}")
    return out


class SpjExecutor:
    """Run one SPJ(+aggregate) query incrementally: ``init``, ``step``, ``encode``/``decode``.

    Attributes: ``analysis`` (the analyser's verdict), ``mode`` (``"synopsis"`` or
    ``"full-history"``), ``engine`` (``"buckets"``, ``"down-sets"`` or ``"per-lto"``),
    ``kind`` (``"bag"``, ``"set"`` or ``"agg"``), ``bound`` (the memory bound in units of the
    synopsis run, None on the full history) and ``output_columns``.
    """

    def __init__(self, sql: str, schemas: Schemas, timestamps: Mapping[str, str] | None = None,
                 allow_unbounded: bool = False, mode: str | None = None):
        """``mode``: None (synopsis when possible), ``"synopsis"`` or ``"full-history"``; an
        unbounded query needs ``allow_unbounded=True`` in any mode."""
        if mode not in (None, SYNOPSIS, FULL_HISTORY):
            raise SpjError(f"unknown executor mode {mode!r}; use {SYNOPSIS!r} or "
                           f"{FULL_HISTORY!r}")
        self.analysis: Analysis = analyze(sql, schemas, timestamps)
        query = self.analysis.query
        source = synopsis_source(self.analysis)
        self.mode = choose_mode(self.analysis, source, mode, allow_unbounded)
        self.kind = "agg" if query.aggregate else "set" if query.distinct else "bag"
        self.bound: int | None = None
        self._read = self._read_columns(schemas)
        self.output_columns: list[str] = _names(query) + (["count"] if self.kind == "bag" else [])
        fingerprint = hashlib.sha256(f"{query!r}|{self.mode}".encode()).hexdigest()[:16]
        self._timed: DownSetEngine | None = None
        #: ``"buckets"`` (§7 synopses or the full history), ``"down-sets"`` (application time)
        #: or ``"per-lto"`` (set self-joins bounded per derived LTO query)
        self.engine = "buckets"
        self._pieces: PieceEngine | None = None
        if self.mode == SYNOPSIS and isinstance(source, DownSets):
            self._timed, self.bound = DownSetEngine(query), source.units
            self._timed_format = TimedFormat(fingerprint, self._timed, sql)
            self.engine = "down-sets"
            return
        if self.mode == SYNOPSIS and isinstance(source, PerLto):
            self._pieces = PieceEngine(query, source.spj)
            self.bound = self._pieces.units
            self._pieces_format = PiecesFormat(fingerprint, self._pieces, sql)
            self.engine = "per-lto"
            return
        if self.mode == SYNOPSIS:
            spj, cl, self.bound = source
        else:
            spj = full_spj(query)
            cl = spj.closure()
        full = self.mode == FULL_HISTORY
        self._plan = Plan(query, spj, cl, self.kind, full)
        self._batches = Batches(self._plan, full)
        self._format = StateFormat(fingerprint, self.mode, self._batches, self._plan.aggs, sql)

    def _read_columns(self, schemas: Schemas) -> dict[str, tuple[tuple[str, str], ...]]:
        """Stream -> (column, value kind) for every column the query reads."""
        q = self.analysis.query
        used = {(q.occurrences[a.occ], a.name) for a in full_spj(q).attrs}
        out = {}
        for stream, cols in schemas.items():
            typed = dict(cols) if isinstance(cols, Mapping) else dict.fromkeys(cols, "int")
            out[stream] = tuple((c, value_kind(q, stream, c, t)) for c, t in typed.items()
                                if (stream, c) in used)
        return out

    def init(self) -> SpjState | TimedState | PiecesState:
        """The empty state."""
        if self._pieces is not None:
            return self._pieces.init()
        return self._timed.init() if self._timed else self._batches.init()

    def check(self, stream: str, row: Row) -> str | None:
        """Why ``row`` cannot be processed (unknown stream, missing column, wrong type), or None."""
        if stream not in self._read:
            return f"unknown stream {stream!r} (streams: {', '.join(sorted(self._read))})"
        if not isinstance(row, Mapping):
            return f"stream {stream!r}: row {row!r} is not a mapping of column names to values"
        for col, kind in self._read[stream]:
            if col not in row:
                return f"stream {stream!r}: missing column {col!r} in row {dict(row)!r}"
            v = row[col]
            if v is not None and not fits(kind, v):
                return f"stream {stream!r}, column {col!r}: value {v!r} is not {EXPECTED[kind]}"
        query = self.analysis.query
        stamp = query.timestamps.get(stream) if self._timed is not None else None
        if stamp is not None and stream in query.occurrences.values() and row.get(stamp) is None:
            return (f"stream {stream!r}, column {stamp!r}: no timestamp (application time needs "
                    "one on every row)")
        return None

    def step(self, state: SpjState | TimedState | PiecesState, events: Sequence[Event]
             ) -> tuple[SpjState | TimedState | PiecesState, list[dict]]:
        """Process one batch; returns the (same, updated) state and the output increment.

        Every row is checked first: a bad row raises :class:`SpjError` and leaves the state
        untouched."""
        batch = list(events)
        for stream, row in batch:
            reason = self.check(stream, row)
            if reason is not None:
                raise SpjError(reason)
        if self._timed is not None:
            return state, self._timed_step(state, batch)
        if self._pieces is not None:
            return state, self._pieces.step(state, batch, self.output_columns,
                                            self.analysis.query.constants)
        sink = self._sink(state)
        self._batches.step(state, batch, sink)
        return state, sink.rows()

    def _timed_step(self, state: TimedState, batch: list[Event]) -> list[dict]:
        self._timed.check_order(state, batch)
        added = self._timed.step(state, batch)
        q = self.analysis.query
        proj = tuple(range(len(q.projection)))
        sink = BagSink(self.output_columns, proj, q.constants) if self.kind == "bag" else \
            SetSink(self.output_columns, proj, state.emitted, q.constants)
        for values, n in added.items():
            sink.add(list(values), [], n)
        return sink.rows()

    def _sink(self, state: SpjState) -> Sink:
        p = self._plan
        if self.kind == "bag":
            return BagSink(self.output_columns, p.proj_slots, self.analysis.query.constants)
        if self.kind == "set":
            return SetSink(self.output_columns, p.proj_slots, state.emitted,
                           self.analysis.query.constants)
        return AggSink(self.analysis.query, self.output_columns, p.group_slots, p.aggs,
                       state.groups, p.path == REPS)

    def size(self, state: SpjState | TimedState | PiecesState) -> int:
        """Stored entries: tuples (full history) or buckets/representatives, emitted rows, groups
        and value -> count pairs of holistic aggregates."""
        if self._timed is not None:
            return self._timed.size(state)
        if self._pieces is not None:
            return self._pieces.size(state)
        return size(state, self._plan.aggs, self.mode == FULL_HISTORY)

    def encode(self, state: SpjState | TimedState | PiecesState) -> bytes:
        """Canonical bytes of ``state`` (sorted JSON, integers at a fixed width); equal states
        give equal bytes, and a synopsis whose counters grow keeps its size."""
        if self._timed is not None:
            return self._timed_format.encode(state)
        if self._pieces is not None:
            return self._pieces_format.encode(state)
        return self._format.encode(state)

    def decode(self, data: bytes) -> SpjState | TimedState | PiecesState:
        """The state ``encode`` wrote; refuses states of another query or mode."""
        if self._timed is not None:
            return self._timed_format.decode(data)
        if self._pieces is not None:
            return self._pieces_format.decode(data)
        return self._format.decode(data)

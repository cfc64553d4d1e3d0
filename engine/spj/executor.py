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

Synopses (all keyed by the bucket of the §7 ranges ``< kmin``, each ``k`` in ``[kmin, kmax]``,
``> kmax`` of every attribute in the WHERE clause or the output, after the implied filters):
bag queries keep a first representative and a count per bucket; set queries keep the extremal
representatives ``t_max``/``t_min`` (or ``t_first``) of Def 7.3 per bucket plus the emitted set;
aggregates keep per-group partial aggregates and, over several streams, per-bucket partial
aggregates (bag buckets if some aggregate is duplicate-sensitive, set representatives otherwise).
Application-time queries run on the same synopses when the analyser certified them by treating
timestamps as integers (rule E-a); bag queries certified only by rules G1–G3 are not supported
yet. ``encode`` gives canonical bytes: equal states, for instance after different batch plans of
the same input, encode identically.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from .analysis import Analysis, analyze
from .checker import check as fig2
from .closure import INF, Closure
from .errors import SpjError
from .lto import Spj, refs, spj_of
from .model import DUP_INSENSITIVE, OTHER, Aggregate, Atom, Attr, Query
from .parse import Schemas
from .rules import spj_verdict
from .synopsis import spj_synopsis

Row = Mapping[str, Any]
Event = tuple[str, Row]
_Refs = tuple[tuple[int, ...], tuple[int, ...]]  # MaxRef and MinRef positions of a bucket
SYNOPSIS, FULL_HISTORY = "synopsis", "full-history"
_FORMAT = 1
_STR_TYPES = {"string", "str", "varchar", "text", "char"}
_FLOAT_TYPES = {"float", "double", "real", "decimal", "numeric"}
_BOOL_TYPES = {"bool", "boolean"}
_EXPECTED = {"int": "an integer", "str": "a string", "float": "a finite number",
             "bool": "a boolean", "scalar": "a string, boolean or finite number"}


# -- values ------------------------------------------------------------------------------------
def _order(v: Any) -> tuple:
    """A total order over the values a row can hold (None < booleans < numbers < strings)."""
    if v is None:
        return (0, 0)
    if isinstance(v, bool):
        return (1, int(v))
    if isinstance(v, int | float | Fraction):
        return (2, v)
    return (3, str(v))


def _okey(values: Iterable[Any]) -> tuple:
    return tuple(_order(v) for v in values)


def _fits(kind: str, v: Any) -> bool:
    finite = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    if kind == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == "str":
        return isinstance(v, str)
    if kind == "float":
        return finite
    if kind == "bool":
        return isinstance(v, bool)
    return finite or isinstance(v, str | bool)


def _value_kind(query: Query, stream: str, col: str, declared: str) -> str:
    if query.types[stream][col] != OTHER:
        return "int"
    t = declared.lower()
    return ("str" if t in _STR_TYPES else "float" if t in _FLOAT_TYPES
            else "bool" if t in _BOOL_TYPES else "scalar")


def _median(counts: dict[Any, int]) -> Fraction | None:
    """The median of a value -> count multiset, as ``statistics.median`` over Fractions."""
    n = sum(counts.values())
    if not n:
        return None
    want, found, seen = ((n - 1) // 2, n // 2), [], 0
    for v in sorted(counts):
        seen += counts[v]
        while len(found) < 2 and want[len(found)] < seen:
            found.append(v)
    return Fraction(found[0] + found[1], 2)


# -- aggregates ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Agg:
    """One aggregate: its function and where its argument sits (occurrence, tuple position).

    Partial states: ``COUNT(*)`` an int; ``COUNT(x)``/``SUM``/``AVG`` ``[sum, non-null count]``;
    ``MIN``/``MAX`` the extreme value or None; ``COUNT(DISTINCT)``/``MEDIAN`` value -> count.
    """

    func: str
    occ: int | None
    pos: int | None

    @property
    def kind(self) -> str:
        if self.occ is None:
            return "star"
        if self.func in ("COUNT", "SUM", "AVG"):
            return "sum"
        return "ext" if self.func in ("MIN", "MAX") else "map"

    def empty(self) -> Any:
        if self.kind == "star":
            return 0
        if self.kind == "sum":
            return [0, 0]
        return None if self.kind == "ext" else {}

    def part(self, v: Any, n: int) -> Any:
        """The partial state of ``n`` tuples whose argument is ``v``."""
        if self.kind == "sum":
            return [0, 0] if v is None else [0 if self.func == "COUNT" else v * n, n]
        if self.kind == "ext":
            return v
        return {} if v is None else {v: n}

    def merge(self, acc: Any, part: Any, scale: int, distinct: bool) -> Any:
        """Fold ``scale`` copies of ``part`` into ``acc`` (maps and lists in place)."""
        if self.kind == "sum":
            acc[0] += part[0] * scale
            acc[1] += part[1] * scale
            return acc
        if self.kind == "ext":
            if part is None or acc is None:
                return acc if part is None else part
            return min(acc, part) if self.func == "MIN" else max(acc, part)
        for v, c in part.items():
            acc[v] = 1 if distinct else acc.get(v, 0) + c * scale
        return acc

    def final(self, acc: Any) -> Any:
        if self.kind in ("star", "ext"):
            return acc
        if self.func == "COUNT":
            return acc[1]
        if self.func == "SUM":
            return acc[0] if acc[1] else None
        if self.func == "AVG":
            return Fraction(acc[0], acc[1]) if acc[1] else None
        return len(acc) if self.func == "COUNT_DISTINCT" else _median(acc)

    def extra(self, acc: Any) -> int:
        """Stored entries beyond the one holding ``acc`` (the value -> count pairs)."""
        return len(acc) if self.kind == "map" else 0

    def encode(self, acc: Any) -> Any:
        if self.kind == "map":
            return sorted(([v, c] for v, c in acc.items()), key=lambda p: _order(p[0]))
        return list(acc) if self.kind == "sum" else acc

    def decode(self, data: Any) -> Any:
        if self.kind == "map":
            return {v: c for v, c in data}
        return list(data) if self.kind == "sum" else data


# -- state ---------------------------------------------------------------------------------------
class _Entry:
    """A stored tuple with its count (full history), or a bucket's representative, count and
    partial aggregates (``parts``: aggregate index -> partial state; None when ``rep`` is exact)."""

    __slots__ = ("count", "parts", "rep")

    def __init__(self, rep: tuple, count: int, parts: dict[int, Any] | None):
        self.rep, self.count, self.parts = rep, count, parts


class _Store:
    """Entries by key, with hash indexes on the tuple positions that equality joins look up."""

    __slots__ = ("entries", "index")

    def __init__(self, index_keys: Iterable[tuple[int, ...]] = ()):
        self.entries: dict[Any, _Entry] = {}
        self.index: dict[tuple[int, ...], dict[tuple, list[_Entry]]] = {k: {} for k in index_keys}

    def add(self, key: Any, entry: _Entry) -> None:
        self.entries[key] = entry
        for pos, idx in self.index.items():
            idx.setdefault(tuple(entry.rep[p] for p in pos), []).append(entry)

    def find(self, pos: tuple[int, ...], values: tuple) -> Iterable[_Entry]:
        return self.index[pos].get(values, ())


@dataclass
class _Bucket:
    """A set-semantics bucket: representatives by role (max/min/first) and partial aggregates."""

    roles: dict[str, tuple] = field(default_factory=dict)
    parts: dict[int, Any] = field(default_factory=dict)


@dataclass
class SpjState:
    """Executor state (mutable; ``SpjExecutor.encode`` gives its canonical bytes).

    ``stores``: per occurrence, bag buckets (synopsis) or the distinct stored tuples with counts
    (full history, an index over ``rows``); ``rows``: full history, every stored tuple per
    occurrence in arrival order; ``reps``: set synopses per occurrence and bucket; ``emitted``:
    the result rows seen so far (set semantics); ``groups``: group key -> partial aggregates.
    """

    stores: list[_Store]
    rows: list[list[tuple]]
    reps: list[dict[tuple, _Bucket]]
    emitted: set[tuple] = field(default_factory=set)
    groups: dict[tuple, list] = field(default_factory=dict)


# -- compiled query ------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Filter:
    """``Filt(S_i)``: the closure's bounds and differences on one occurrence's attributes."""

    sat: bool
    notnull: tuple[int, ...] = ()
    bounds: tuple[tuple[int, float, float], ...] = ()
    diffs: tuple[tuple[int, int, float], ...] = ()
    eqs: tuple[tuple[int, int], ...] = ()

    def passes(self, t: tuple) -> bool:
        if not self.sat:
            return False
        for p in self.notnull:
            if t[p] is None:
                return False
        for p, lo, hi in self.bounds:
            if not lo <= t[p] <= hi:
                return False
        for p, q, w in self.diffs:
            if t[p] - t[q] > w:
                return False
        return all(t[p] == t[q] for p, q in self.eqs)


@dataclass(frozen=True)
class _Step:
    """Bind occurrence ``occ`` in a join: look up ``key`` positions by the ``src`` slots' values,
    bind ``(slot, position)`` pairs, then check the cross-occurrence atoms now complete."""

    occ: int
    key: tuple[int, ...]
    src: tuple[int, ...]
    bind: tuple[tuple[int, int], ...]
    checks: tuple[Callable[[list], bool], ...]


def _compile_atom(atom: Atom, slot: dict[Attr, int]) -> Callable[[list], bool]:
    i, j = slot[atom.left], slot[atom.right]
    if atom.op == "<":
        return lambda e: e[i] < e[j]
    if atom.op == "<=":
        return lambda e: e[i] <= e[j]
    return lambda e: e[i] == e[j]


def _occs_of(atom: Atom) -> set[str]:
    return {t.occ for t in (atom.left, atom.right) if isinstance(t, Attr)}


def _coord(v: Any, consts: tuple[int, ...]) -> int:
    """The §7 range of an integer: ``kmin - 1`` (below), the value itself, ``kmax + 1`` (above)."""
    if not consts:
        return 0
    return consts[0] - 1 if v < consts[0] else consts[-1] + 1 if v > consts[-1] else v


def _names(query: Query) -> list[str]:
    seen: Counter = Counter()
    out = []
    for o in query.output:
        seen[str(o)] += 1
        out.append(str(o) if seen[str(o)] == 1 else f"{o}#{seen[str(o)]}")
    return out


def _refusal(a: Analysis) -> str:
    parts = [f"{v.condition}: {v.explanation}"
             + (f" [attributes {', '.join(v.attributes)}]" if v.attributes else "")
             for v in a.violations]
    text = ("query is not bounded-memory computable"
            + (" (not certified bounded)" if a.proof == "not_certified" else "") + ": "
            + "; ".join(parts))
    w = a.witness
    if w is not None:
        text += f"; adversarial input family ({w.condition}, stream {w.stream}): {w.description}"
    return text + "; allow_unbounded=True runs it on the full history (the state grows)"


class SpjExecutor:
    """Run one SPJ(+aggregate) query incrementally: ``init``, ``step``, ``encode``/``decode``.

    Attributes: ``analysis`` (the analyser's verdict), ``mode`` (``"synopsis"`` or
    ``"full-history"``), ``kind`` (``"bag"``, ``"set"`` or ``"agg"``), ``bound`` (the memory bound
    in units of the synopsis run, None on the full history) and ``output_columns``.
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
        source = self._synopsis_source()
        self.mode = self._choose_mode(source, mode, allow_unbounded)
        self.kind = "agg" if query.aggregate else "set" if query.distinct else "bag"
        self.bound: int | None = None
        if self.mode == SYNOPSIS:
            spj, cl, self.bound = source
        else:
            spj = self._full_spj()
            cl = spj.closure()
        self._compile(spj, cl)
        self._read = self._read_columns(schemas)
        names = _names(query)
        self.output_columns: list[str] = names + (["count"] if self.kind == "bag" else [])
        self._fingerprint = hashlib.sha256(f"{query!r}|{self.mode}".encode()).hexdigest()[:16]

    # -- plan selection ------------------------------------------------------------------------
    def _synopsis_source(self) -> tuple[Spj, Closure, int] | str:
        """The analysed query and closure to run on synopses, or why there is none."""
        a = self.analysis
        if not a.bounded:
            return _refusal(a)
        q, v = a.query, a.verdict
        units = a.synopsis.units
        if q.timestamps and not q.aggregate and not q.distinct:
            v = spj_verdict(q)
            if not v.bounded:
                return ("application-time bag query certified only by rules G1–G3 (timestamp "
                        "order): not supported by the executor yet (it needs the down-set engine "
                        "of design/spj-application-time.md §4.4); allow_unbounded=True runs it "
                        "on the full history")
            units = spj_synopsis(v.spj, v.closure).units
        if q.distinct and not q.aggregate and q.has_self_join and len(v.spj.occs) > 1 \
                and v.closure.sat and fig2(v.spj, v.closure):
            return ("set self-join bounded only after removing redundant occurrences per derived "
                    "LTO query: not supported by the synopsis executor yet; allow_unbounded=True "
                    "runs it on the full history")
        return v.spj, v.closure, units

    def _choose_mode(self, source: tuple[Spj, Closure, int] | str, mode: str | None,
                     allow_unbounded: bool) -> str:
        """Synopses when possible; the full history only if asked for or allowed."""
        if not self.analysis.bounded and not allow_unbounded:
            raise SpjError(str(source))
        if not isinstance(source, str):
            return mode or SYNOPSIS
        if mode == SYNOPSIS or (mode is None and not allow_unbounded):
            raise SpjError(source)
        return FULL_HISTORY

    def _full_spj(self) -> Spj:
        q = self.analysis.query
        if q.aggregate:
            return spj_of(q, q.group_by, True, extra=tuple(a.arg for a in q.aggregates if a.arg))
        return spj_of(q, q.projection, not q.distinct)

    def _read_columns(self, schemas: Schemas) -> dict[str, tuple[tuple[str, str], ...]]:
        """Stream -> (column, value kind) for every column the query reads."""
        q = self.analysis.query
        used = {(q.occurrences[a.occ], a.name) for a in self._full_spj().attrs}
        out = {}
        for stream, cols in schemas.items():
            typed = dict(cols) if isinstance(cols, Mapping) else dict.fromkeys(cols, "int")
            out[stream] = tuple((c, _value_kind(q, stream, c, t)) for c, t in typed.items()
                                if (stream, c) in used)
        return out

    # -- compilation ---------------------------------------------------------------------------
    def _compile(self, spj: Spj, cl: Closure) -> None:
        """Tuple layouts, filters, bucket keys and aggregates per occurrence, then join plans."""
        q = self.analysis.query
        self._cl, self._spj, self._occs = cl, spj, tuple(spj.occs)
        n = len(self._occs)
        sensitive = any(a.func not in DUP_INSENSITIVE for a in q.aggregates)
        self._bucketed = self.mode == SYNOPSIS and n > 1
        reps = self.kind == "set" or (self.kind == "agg" and not sensitive)
        self._path = "reps" if self._bucketed and reps else "counted"
        self._keep = self.mode == FULL_HISTORY or self._bucketed
        self._cols = [spj.occs[o] for o in self._occs]
        self._isint = [tuple(q.type_of(a) != OTHER for a in cols) for cols in self._cols]
        self._by_stream: dict[str, list[int]] = {}
        for i, o in enumerate(self._occs):
            self._by_stream.setdefault(q.occurrences[o], []).append(i)
        self._slot = {a: s for s, a in enumerate(a for cols in self._cols for a in cols)}
        self._atom_attrs = {t for at in spj.atoms for t in (at.left, at.right)
                            if isinstance(t, Attr)}
        self._consts = spj.constants
        self._proj_slots = tuple(self._slot[a] for a in spj.proj)
        self._group_slots = tuple(self._slot[a] for a in q.group_by)
        self._aggs = [self._agg(a) for a in q.aggregates]
        self._agg_on = [[(k, g) for k, g in enumerate(self._aggs) if g.occ == i] for i in range(n)]
        keyed = self._atom_attrs | set(spj.proj) | set(q.group_by)
        self._key = [tuple((p, self._isint[i][p]) for p, a in enumerate(cols) if a in keyed)
                     for i, cols in enumerate(self._cols)]
        self._filters = [self._filter(i) for i in range(n)]
        self._start = [tuple((self._slot[a], p) for p, a in enumerate(c)) for c in self._cols]
        self._ref_cache: dict[tuple[int, tuple], _Refs | None] = {}
        self._compile_joins()

    def _compile_joins(self) -> None:
        n = len(self._occs)
        self._plans = [self._plan(i) for i in range(n)]
        self._ready = [self._proj_ready(i) for i in range(n)]
        lookups: list[set[tuple[int, ...]]] = [set() for _ in range(n)]
        for plan in self._plans:
            for st in plan:
                if st.key:
                    lookups[st.occ].add(st.key)
        self._lookups = [tuple(sorted(k)) for k in lookups]

    def _agg(self, agg: Aggregate) -> _Agg:
        if agg.arg is None:
            return _Agg(agg.func, None, None)
        i = self._occs.index(agg.arg.occ)
        return _Agg(agg.func, i, self._cols[i].index(agg.arg))

    def _filter(self, i: int) -> _Filter:
        cl, cols = self._cl, self._cols[i]
        if not cl.sat:
            return _Filter(False)
        used = [p for p, a in enumerate(cols) if a in self._atom_attrs]
        ints = [p for p in used if self._isint[i][p]]
        lo = {p: cl.lower(cols[p]) for p in ints}
        hi = {p: cl.upper(cols[p]) for p in ints}
        bounds = tuple((p, lo[p], hi[p]) for p in ints if lo[p] > -INF or hi[p] < INF)
        diffs = tuple((p, q, w) for p in ints for q in ints
                      if p != q and (w := cl.ub(cols[p], cols[q])) < hi[p] - lo[q])
        eqs = tuple((p, q) for p in used for q in used if p < q and not self._isint[i][p]
                    and not self._isint[i][q] and cl.eq(cols[p], cols[q]))
        return _Filter(True, tuple(used), bounds, diffs, eqs)

    def _links(self, j: int, bound: list[int]) -> list[tuple[int, int]]:
        """(position in ``j``, slot of a bound attribute) pairs that must be equal."""
        cl, out = self._cl, []
        if not cl.sat:
            return out
        for p, a in enumerate(self._cols[j]):
            if a not in self._atom_attrs or (self._bucketed and not cl.bounded(a)):
                continue
            src = next((b for i in bound for b in self._cols[i]
                        if b in self._atom_attrs and cl.eq(a, b)), None)
            if src is not None:
                out.append((p, self._slot[src]))
        return out

    def _plan(self, start: int) -> tuple[_Step, ...]:
        """Join order from ``start``: greedily the occurrence with the most equality links."""
        bound, steps = [start], []
        rest = [j for j in range(len(self._occs)) if j != start]
        while rest:
            j = max(rest, key=lambda r: (len(self._links(r, bound)), -r))
            links = self._links(j, bound)
            names = {self._occs[i] for i in (*bound, j)}
            checks = tuple(_compile_atom(at, self._slot) for at in self._spj.atoms
                           if self._occs[j] in _occs_of(at) and len(_occs_of(at)) > 1
                           and _occs_of(at) <= names)
            steps.append(_Step(j, tuple(p for p, _ in links), tuple(s for _, s in links),
                               self._start[j], checks))
            bound.append(j)
            rest.remove(j)
        return tuple(steps)

    def _proj_ready(self, start: int) -> int:
        """How many join steps bind every projected attribute (set pruning starts there)."""
        need = {self._occs.index(a.occ) for a in self._spj.proj} - {start}
        for k, st in enumerate(self._plans[start]):
            if not need:
                return k
            need.discard(st.occ)
        return len(self._plans[start])

    # -- public API ----------------------------------------------------------------------------
    def init(self) -> SpjState:
        """The empty state."""
        n = len(self._occs)
        return SpjState([_Store(self._lookups[i]) for i in range(n)] if self._keep else [],
                        [[] for _ in range(n)] if self.mode == FULL_HISTORY else [],
                        [{} for _ in range(n)] if self._path == "reps" else [])

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
            if v is not None and not _fits(kind, v):
                return f"stream {stream!r}, column {col!r}: value {v!r} is not {_EXPECTED[kind]}"
        return None

    def step(self, state: SpjState, events: Sequence[Event]) -> tuple[SpjState, list[dict]]:
        """Process one batch; returns the (same, updated) state and the output increment.

        Every row is checked first: a bad row raises :class:`SpjError` and leaves the state
        untouched."""
        batch = list(events)
        for stream, row in batch:
            reason = self.check(stream, row)
            if reason is not None:
                raise SpjError(reason)
        sink = _BagSink(self) if self.kind == "bag" else _SetSink(self, state) \
            if self.kind == "set" else _AggSink(self, state, self._path == "reps")
        if self._path == "reps":
            self._step_reps(state, batch, sink)
        else:
            self._step_counted(state, batch, sink)
        return state, sink.rows()

    def size(self, state: SpjState) -> int:
        """Stored entries: tuples (full history) or buckets/representatives, emitted rows, groups
        and value -> count pairs of holistic aggregates."""
        total = len(state.emitted) + sum(1 + sum(a.extra(x) for a, x in zip(self._aggs, acc,
                                                                            strict=True))
                                         for acc in state.groups.values())
        if self.mode == FULL_HISTORY:
            return total + sum(len(r) for r in state.rows)
        for store in state.stores:
            total += sum(1 + self._parts_extra(e.parts) for e in store.entries.values())
        for buckets in state.reps:
            total += sum(len(b.roles) + self._parts_extra(b.parts) for b in buckets.values())
        return total

    def _parts_extra(self, parts: dict[int, Any] | None) -> int:
        return sum(self._aggs[k].extra(x) for k, x in (parts or {}).items())

    # -- batches -------------------------------------------------------------------------------
    def _tuples(self, batch: list[Event]) -> Iterable[tuple[int, tuple]]:
        """(occurrence, tuple) for every row that passes the occurrence's filters."""
        for stream, row in batch:
            for i in self._by_stream.get(stream, ()):
                t = tuple(row[a.name] for a in self._cols[i])
                if self._filters[i].passes(t):
                    yield i, t

    def _bucket(self, i: int, t: tuple) -> tuple:
        return tuple(_coord(t[p], self._consts) if isint else 0 for p, isint in self._key[i])

    def _step_counted(self, state: SpjState, batch: list[Event], sink: _Sink) -> None:
        """Telescoping delta join: Δ_i ⋈ (S_j, j < i, with the batch) ⋈ (S_j, j > i, without)."""
        deltas = [_Store() for _ in self._occs]
        for i, t in self._tuples(batch):
            if self.mode == FULL_HISTORY:
                state.rows[i].append(t)
            self._add(deltas[i], i, t)
        env: list[Any] = [None] * len(self._slot)
        for i, delta in enumerate(deltas):
            for entry in delta.entries.values():
                self._join(i, entry, env, state.stores, sink)
            if self._keep:
                self._absorb(state.stores[i], delta, i)

    def _add(self, delta: _Store, i: int, t: tuple) -> None:
        key = self._bucket(i, t) if self._bucketed else t
        e = delta.entries.get(key)
        if e is None:
            e = delta.entries[key] = _Entry(t, 0, {k: a.empty() for k, a in self._agg_on[i]}
                                            if self._bucketed else None)
        e.count += 1
        if e.parts is not None:
            for k, a in self._agg_on[i]:
                e.parts[k] = a.merge(e.parts[k], a.part(t[a.pos], 1), 1, False)

    def _absorb(self, store: _Store, delta: _Store, i: int) -> None:
        for key, d in delta.entries.items():
            e = store.entries.get(key)
            if e is None:
                store.add(key, d)
                continue
            e.count += d.count
            if e.parts is not None:
                for k, a in self._agg_on[i]:
                    e.parts[k] = a.merge(e.parts[k], d.parts[k], 1, False)

    def _step_reps(self, state: SpjState, batch: list[Event], sink: _Sink) -> None:
        """Set synopses: update representatives, then join the changed ones with all others."""
        changed: dict[tuple[int, tuple], None] = {}
        for i, t in self._tuples(batch):
            b = self._bucket(i, t)
            refs_b = self._refs(i, b)
            if refs_b is not None and self._offer(state.reps[i].setdefault(b, _Bucket()), i, t,
                                                  *refs_b):
                changed[(i, b)] = None
        if not changed:
            return
        views = [_Store(self._lookups[j]) for j in range(len(self._occs))]
        for j, buckets in enumerate(state.reps):
            for b, bucket in buckets.items():
                for role, rep in bucket.roles.items():
                    views[j].add((b, role), _Entry(rep, 1, bucket.parts))
        env: list[Any] = [None] * len(self._slot)
        for i, b in changed:
            bucket = state.reps[i][b]
            for rep in bucket.roles.values():
                self._join(i, _Entry(rep, 1, bucket.parts), env, views, sink)

    def _refs(self, i: int, b: tuple) -> _Refs | None:
        """MaxRef/MinRef positions of bucket ``b`` (Def 7.3), None if the bucket cannot join."""
        if (i, b) not in self._ref_cache:
            self._ref_cache[(i, b)] = self._bucket_refs(i, b)
        return self._ref_cache[(i, b)]

    def _bucket_refs(self, i: int, b: tuple) -> _Refs | None:
        pins: list[Atom] = []
        consts = self._consts
        for (p, isint), c in zip(self._key[i], b, strict=True):
            a = self._cols[i][p]
            if isint and consts:
                pins.append(Atom(a, "<", consts[0]) if c < consts[0] else
                            Atom(consts[-1], "<", a) if c > consts[-1] else Atom(a, "=", c))
        cl = self._cl.extend(pins)
        if not cl.sat:
            return None
        spj = Spj(self._spj.occs, self._spj.proj, (*self._spj.atoms, *pins), False)
        mine = [r for r in refs(spj, cl) if r.attr.occ == self._occs[i]]
        pos = self._cols[i].index
        return (tuple(sorted({pos(r.attr) for r in mine if r.role == "max"})),
                tuple(sorted({pos(r.attr) for r in mine if r.role == "min"})))

    def _offer(self, bucket: _Bucket, i: int, t: tuple, mx: tuple[int, ...],
               mn: tuple[int, ...]) -> bool:
        """Keep ``t`` if it beats the bucket's representatives; fold its partial aggregates."""
        roles, changed = bucket.roles, False
        if mx and ("max" not in roles or min(t[p] for p in mx) > min(roles["max"][p] for p in mx)):
            roles["max"], changed = t, True
        if mn and ("min" not in roles or max(t[p] for p in mn) < max(roles["min"][p] for p in mn)):
            roles["min"], changed = t, True
        if not mx and not mn and "first" not in roles:
            roles["first"], changed = t, True
        for k, a in self._agg_on[i]:
            changed |= self._fold_part(bucket.parts, k, a, t[a.pos])
        return changed

    @staticmethod
    def _fold_part(parts: dict[int, Any], k: int, a: _Agg, v: Any) -> bool:
        """Fold one argument value into a set bucket's partial aggregate; True if it changed."""
        old = parts.get(k, a.empty())
        mark = len(old) if a.kind == "map" else old  # maps are updated in place
        new = parts[k] = a.merge(old, a.part(v, 1), 1, True)
        return mark != (len(new) if a.kind == "map" else new)

    def _join(self, i: int, entry: _Entry, env: list, views: Sequence[_Store],
              sink: _Sink) -> None:
        for slot, p in self._start[i]:
            env[slot] = entry.rep[p]
        chosen: list[_Entry | None] = [None] * len(self._occs)
        chosen[i] = entry
        prune = self._ready[i] if sink.prunes else None
        self._walk(self._plans[i], 0, env, chosen, entry.count, views, sink, prune)

    def _walk(self, steps: tuple[_Step, ...], k: int, env: list, chosen: list, mult: int,
              views: Sequence[_Store], sink: _Sink, prune: int | None) -> None:
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
                self._walk(steps, k + 1, env, chosen, mult * e.count, views, sink, prune)

    # -- encoding ------------------------------------------------------------------------------
    def encode(self, state: SpjState) -> bytes:
        """Canonical bytes of ``state`` (sorted JSON, integers at a fixed width); equal states
        give equal bytes, and a synopsis whose counters grow keeps its size."""
        doc: dict[str, Any] = {"format": _FORMAT, "query": self._fingerprint, "mode": self.mode,
                               "emitted": sorted((list(r) for r in state.emitted), key=_okey),
                               "groups": [[list(g), self._enc_acc(acc)] for g, acc in
                                          sorted(state.groups.items(), key=lambda x: _okey(x[0]))]}
        if self.mode == FULL_HISTORY:
            doc["rows"] = [[list(t) for t in rows] for rows in state.rows]
        elif self._path == "reps":
            doc["reps"] = [[[list(b), {r: list(t) for r, t in bk.roles.items()},
                             self._enc_parts(bk.parts)] for b, bk in
                            sorted(buckets.items(), key=lambda x: _okey(x[0]))]
                           for buckets in state.reps]
        else:
            doc["buckets"] = [[[list(b), list(e.rep), e.count, self._enc_parts(e.parts)]
                               for b, e in sorted(s.entries.items(), key=lambda x: _okey(x[0]))]
                              for s in state.stores]
        return _canonical(doc).encode()

    def _enc_acc(self, acc: list) -> list:
        return [a.encode(x) for a, x in zip(self._aggs, acc, strict=True)]

    def _enc_parts(self, parts: dict[int, Any] | None) -> list:
        return [[k, self._aggs[k].encode(x)] for k, x in sorted((parts or {}).items())]

    def _dec_parts(self, data: list) -> dict[int, Any]:
        return {k: self._aggs[k].decode(x) for k, x in data}

    def decode(self, data: bytes) -> SpjState:
        """The state ``encode`` wrote; refuses states of another query or mode."""
        try:
            doc = json.loads(data)
        except ValueError as err:
            raise SpjError(f"not an encoded executor state: {err}") from None
        if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
            raise SpjError("not an encoded executor state (unknown format)")
        if (doc.get("query"), doc.get("mode")) != (self._fingerprint, self.mode):
            raise SpjError(f"state of another query or mode ({doc.get('mode')}); this executor "
                           f"runs {self.analysis.sql!r} in {self.mode} mode")
        try:
            return self._rebuild(doc)
        except (KeyError, TypeError, ValueError, IndexError) as err:
            raise SpjError(f"malformed executor state: {err!r}") from None

    def _rebuild(self, doc: dict) -> SpjState:
        state = self.init()
        state.emitted = {tuple(r) for r in doc["emitted"]}
        state.groups = {tuple(g): [a.decode(x) for a, x in zip(self._aggs, acc, strict=True)]
                        for g, acc in doc["groups"]}
        if self.mode == FULL_HISTORY:
            for i, rows in enumerate(doc["rows"]):
                delta = _Store()
                for r in rows:
                    t = tuple(r)
                    state.rows[i].append(t)
                    self._add(delta, i, t)
                self._absorb(state.stores[i], delta, i)
        elif self._path == "reps":
            for i, buckets in enumerate(doc["reps"]):
                state.reps[i] = {tuple(b): _Bucket({r: tuple(t) for r, t in roles.items()},
                                                   self._dec_parts(parts))
                                 for b, roles, parts in buckets}
        else:
            for i, entries in enumerate(doc["buckets"]):
                for b, rep, count, parts in entries:
                    state.stores[i].add(tuple(b), _Entry(tuple(rep), count,
                                                         self._dec_parts(parts)))
        return state


def _canonical(value: Any) -> str:
    """JSON with sorted keys, no spaces between tokens and every integer right-aligned in 20
    characters (JSON allows the leading blanks), so counters do not change the encoded size."""
    if isinstance(value, bool) or value is None or isinstance(value, float | str):
        return json.dumps(value, allow_nan=False, ensure_ascii=False)
    if isinstance(value, int):
        return f"{value:>20d}"
    if isinstance(value, dict):
        items = sorted((str(k), v) for k, v in value.items())
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{_canonical(v)}"
                              for k, v in items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_canonical(v) for v in value) + "]"
    raise TypeError(f"cannot encode {type(value).__name__} in an executor state")


# -- output sinks ----------------------------------------------------------------------------------
class _Sink:
    """Receives the joined combinations of a batch and builds the output increment."""

    prunes = False

    def known(self, env: list) -> bool:
        return False

    def add(self, env: list, chosen: list, mult: int) -> None:
        raise NotImplementedError

    def rows(self) -> list[dict]:
        raise NotImplementedError


class _BagSink(_Sink):
    def __init__(self, ex: SpjExecutor):
        self.ex, self.out = ex, Counter()

    def add(self, env: list, chosen: list, mult: int) -> None:
        self.out[tuple(env[s] for s in self.ex._proj_slots)] += mult

    def rows(self) -> list[dict]:
        names = self.ex.output_columns
        return [dict(zip(names, (*p, n), strict=True))
                for p, n in sorted(self.out.items(), key=lambda x: _okey(x[0]))]


class _SetSink(_Sink):
    prunes = True

    def __init__(self, ex: SpjExecutor, state: SpjState):
        self.ex, self.emitted, self.found = ex, state.emitted, set()

    def known(self, env: list) -> bool:
        p = tuple(env[s] for s in self.ex._proj_slots)
        return p in self.emitted or p in self.found

    def add(self, env: list, chosen: list, mult: int) -> None:
        if not self.known(env):
            self.found.add(tuple(env[s] for s in self.ex._proj_slots))

    def rows(self) -> list[dict]:
        self.emitted |= self.found
        names = self.ex.output_columns
        return [dict(zip(names, p, strict=True)) for p in sorted(self.found, key=_okey)]


class _AggSink(_Sink):
    """Folds combinations into the group map; remembers each touched group's values before."""

    def __init__(self, ex: SpjExecutor, state: SpjState, distinct: bool):
        self.ex, self.groups, self.distinct = ex, state.groups, distinct
        self.before: dict[tuple, tuple | None] = {}
        if not ex._group_slots and () not in self.groups:
            self._touch(())

    def _touch(self, g: tuple) -> list:
        acc = self.groups.get(g)
        if g not in self.before:
            self.before[g] = None if acc is None else self._values(acc)
        if acc is None:
            acc = self.groups[g] = [a.empty() for a in self.ex._aggs]
        return acc

    def _values(self, acc: list) -> tuple:
        return tuple(a.final(x) for a, x in zip(self.ex._aggs, acc, strict=True))

    def add(self, env: list, chosen: list, mult: int) -> None:
        acc = self._touch(tuple(env[s] for s in self.ex._group_slots))
        for k, a in enumerate(self.ex._aggs):
            if a.occ is None:
                acc[k] += mult
                continue
            e = chosen[a.occ]
            part = e.parts[k] if e.parts is not None else a.part(e.rep[a.pos], e.count)
            acc[k] = a.merge(acc[k], part, mult // e.count, self.distinct)

    def rows(self) -> list[dict]:
        q = self.ex.analysis.query
        out = []
        for g in sorted(self.before, key=_okey):
            values = self._values(self.groups[g])
            if values == self.before[g]:
                continue
            by_group, aggs = dict(zip(q.group_by, g, strict=True)), iter(values)
            row = [by_group[o] if isinstance(o, Attr) else next(aggs) for o in q.output]
            out.append(dict(zip(self.ex.output_columns, row, strict=True)))
        return out

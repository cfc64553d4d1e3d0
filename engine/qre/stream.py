"""QREs as a keyed stream operator: per key, events in event-time order, with allowed lateness.

An event that lacks a field the query reads, or has it null, is rejected with a reason (it goes
to the quarantine table) before it can move the watermark. Per key, an event below the watermark
(max event time seen in arrival order minus lateness) is late and goes to the late table. Other
events wait in a buffer until the watermark reaches them; they are then fed to the evaluator in
(event time, arrival) order, so the output does not depend on arrival disorder within the lateness
or on batch boundaries. Output modes: ``every`` (a row for each event after which the output is a
value), ``changes`` (only when that value changes), ``final`` (the value at the end of the input).
Items are the recording's columns; timestamp columns are given to the query as microseconds since
the epoch.

Strongly typed queries run on the numba kernel (``kernel.py``) whenever the released items'
fields hold numbers, else on the compiled interpreter; both keep a key's state in the canonical
encoding of the query's automaton, so they give the same outputs and the same state bytes and
continue each other's states. Other queries run on the derivative engine, state pickled.

A step works on whole columns: the batch is sorted by (key, arrival), rejection and lateness are
array operations, and the buffered events of every key are released together. The state has one
row per key: ``max_t``, the evaluator state, ``last`` (the last emitted ``value_json``; in mode
``final`` the ``[event time, arrival]`` of the last released event) and the buffered events,
``pending``: fixed-size little-endian records in (event time, arrival) order, each the event
time, the arrival sequence and, per field the query reads (sorted by name), a kind byte and an
8-byte payload: an int64, the bits of a float64, a bool as 0 or 1, or, for any other value, its
index in the key's ``pending_values`` (a JSON list, null when there are none). A value is stored
as it was read through JSON (``default=str``), so buffering never changes the item.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..catalog import COLUMN_TYPES, CatalogError, QuerySpec, RecordingSpec
from ..operator import REASON, SEQ, TIME, KeyedOperator, StateCodec, StepResult
from ..ordering import END_OF_INPUT, NO_TIME, max_before, order_by_code
from .compiled import Automaton, CompiledEvaluator, explore
from .derivative import DerivativeEvaluator
from .errors import QREError
from .evaluator import State, evaluate
from .kernel import Kernel, KernelRun, KernelStates, Kind, kernel_for
from .reference import reference_poly
from .strong import strongly_typed
from .terms import Term
from .text import parse
from .values import UNIT, Outcome

OUTPUT_MODES = ("every", "changes", "final")
#: Kinds of a buffered value (how its payload is read).
INT, FLOAT, BOOL, OTHER = 0, 1, 2, 3
#: Kernel field kind of a run whose values of a field all have the kind.
_FIELD_KINDS = {INT: "int", FLOAT: "float", BOOL: "bool"}
_INT64 = range(-(2**63), 2**63)
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}  # as json.dumps writes them


@dataclass(frozen=True)
class QreSpec:
    """A per-key QRE query of the catalog."""

    key: str
    key_type: str
    lateness_us: int
    text: str
    output: str
    timestamp_columns: tuple[str, ...]
    fields: tuple[str, ...]  # the recording columns the query reads (items carry only these)
    int_columns: tuple[str, ...] = ()  # the recording's int columns (read as ints, even when
    # nulls in a batch made pandas hold them as floats)


def parse_qre_query(query: QuerySpec, recording: RecordingSpec) -> QreSpec:
    """Check the ``query`` text and ``output`` mode of a ``kind: qre`` query."""
    if not isinstance(query.query, str):
        raise CatalogError(query.source, "query", "expected the QRE text (see engine/qre/README)")
    try:
        term = parse(query.query)
    except QREError as exc:
        raise CatalogError(query.source, "query", str(exc)) from exc
    unknown = sorted(term.fields - set(recording.columns))
    if unknown:
        raise CatalogError(query.source, "query", f"reads {', '.join(map(repr, unknown))}, not "
                           f"a column of recording {recording.name!r}")
    output = query.output or "every"
    if output not in OUTPUT_MODES:
        raise CatalogError(query.source, "output",
                           f"expected one of {', '.join(OUTPUT_MODES)}, got {output!r}")
    key = query.key or recording.key
    return QreSpec(key=key, key_type=recording.columns[key], lateness_us=query.lateness_us,
                   text=query.query, output=output,
                   timestamp_columns=tuple(c for c, t in recording.columns.items()
                                           if t == "timestamp"),
                   fields=tuple(c for c in recording.columns if c in term.fields),
                   int_columns=tuple(c for c, t in recording.columns.items() if t == "int"))


def _value(outcome) -> float | None:
    v = outcome.value
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _reason(missing: list[str]) -> str:
    return "the query reads " + ", ".join(f"{f!r}" for f in missing) + " but the event has " + (
        "no value for it" if len(missing) == 1 else "no values for them")


def rejection(fields: frozenset[str], item: dict) -> str | None:
    """Why the query cannot read ``item`` (a field it reads is missing or null), else None."""
    missing = sorted(f for f in fields if item.get(f) is None)
    return _reason(missing) if missing else None


def _row(key_column: str, key, t: int, seq: int, outcome) -> dict:
    return {key_column: key, "event_time": t, "arrival_seq": seq, "value": _value(outcome),
            "value_json": json.dumps(outcome.value, default=str)}


def _column(events: pd.DataFrame, col: str, spec: QreSpec) -> pd.Series:
    """A field's values as the query reads them (timestamps as microseconds, NaT as NaN)."""
    values = events[col]
    if col in spec.timestamp_columns and pd.api.types.is_datetime64_any_dtype(values):
        values = pd.to_datetime(values, utc=True).dt.as_unit("us").astype("int64")
        values = values.where(events[col].notna())
    elif col in spec.int_columns and values.dtype.kind == "f":
        values = values.astype("Int64")  # a null in the batch made the column float
    return values


def _items(events: pd.DataFrame, spec: QreSpec) -> list[dict]:
    """Events as plain-Python dicts (JSON-able; NaN and NaT become None)."""
    columns = {col: [None if pd.isna(v) else v for v in _column(events, col, spec).tolist()]
               for col in spec.fields if col in events}
    return [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)] \
        if columns else [{} for _ in range(len(events))]


def _classify(values: pd.Series, others: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Kinds and payloads of a column's values (appending values of kind ``OTHER`` to
    ``others``); numpy int, float and bool columns without a per-value look."""
    n = len(values)
    if isinstance(values.dtype, pd.Int64Dtype):  # nulls are marked missing by the caller
        return np.full(n, INT, np.int8), values.fillna(0).to_numpy(dtype=np.int64)
    dtype = values.dtype.kind if isinstance(values.dtype, np.dtype) else "O"
    if dtype in "bif" or (dtype == "u" and (n == 0 or values.max() < 2**63)):
        code = {"b": BOOL, "f": FLOAT}.get(dtype, INT)
        array = values.to_numpy()
        payload = (array.astype(np.float64).view(np.int64) if code == FLOAT
                   else array.astype(np.int64))
        return np.full(n, code, np.int8), payload
    kinds, payload = np.full(n, OTHER, np.int8), np.zeros(n, np.int64)
    floats = np.zeros(n, np.float64)
    for i, value in enumerate(values.tolist()):
        if value is None or pd.isna(value):
            continue  # rejected
        if type(value) not in (int, float, bool, str):  # those read back as they are
            value = json.loads(json.dumps(value, sort_keys=True, default=str))
        if type(value) is bool:
            kinds[i], payload[i] = BOOL, value
        elif type(value) is int and value in _INT64:
            kinds[i], payload[i] = INT, value
        elif type(value) is float:
            kinds[i], floats[i] = FLOAT, value
        else:
            payload[i] = len(others)
            others.append(value)
    is_float = kinds == FLOAT
    payload[is_float] = floats[is_float].view(np.int64)
    return kinds, payload


def _key_order(keys: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """The order of rows by (key, arrival), keys ordered as ``DataFrame.sort_values`` does."""
    code, _ = pd.factorize(keys, sort=True, use_na_sentinel=False)
    return order_by_code(code.astype(np.int64), seq)


@dataclass(frozen=True)
class _Events:
    """Events as columns: key number, event time, arrival sequence and, per field the query reads,
    the kind and payload of the value (see the module docstring; an ``OTHER`` payload indexes
    ``others``)."""

    code: np.ndarray  # int64[N]
    t: np.ndarray  # int64[N]
    seq: np.ndarray  # int64[N]
    kind: np.ndarray  # int8[N, F]
    payload: np.ndarray  # int64[N, F]
    others: list[Any]

    def __len__(self) -> int:
        return len(self.t)

    def take(self, rows: np.ndarray) -> _Events:
        return _Events(self.code[rows], self.t[rows], self.seq[rows], self.kind[rows],
                       self.payload[rows], self.others)

    def concat(self, other: _Events) -> _Events:
        payload = other.payload
        if other.others:
            payload = payload + np.where(other.kind == OTHER, len(self.others), 0)
        return _Events(*(np.concatenate([a, b]) for a, b in [
            (self.code, other.code), (self.t, other.t), (self.seq, other.seq),
            (self.kind, other.kind), (self.payload, payload)]), [*self.others, *other.others])

    def column(self, j: int, kind: str, rows: np.ndarray) -> np.ndarray:
        """Field ``j`` of ``rows`` as a kernel column of ``kind`` ("i", "f" or "b")."""
        payload = self.payload[rows, j]
        return payload.view(np.float64) if kind == "f" else payload != 0 if kind == "b" \
            else payload

    def python(self, j: int, lo: int, hi: int) -> list[Any]:
        """The values of field ``j`` of events ``lo:hi`` as Python objects."""
        kind, payload = self.kind[lo:hi, j], self.payload[lo:hi, j]
        out = np.empty(hi - lo, dtype=object)
        for code, values in ((INT, payload), (FLOAT, payload.view(np.float64)),
                             (BOOL, payload != 0)):
            out[kind == code] = values[kind == code]
        for i in np.flatnonzero(kind == OTHER):
            out[i] = self.others[payload[i]]
        return out.tolist()


@dataclass(frozen=True)
class _Keys:
    """Per key of a step: its state row's columns (a key new to the state has no evaluator, no
    buffered events and no last output)."""

    key: np.ndarray
    max_t: np.ndarray  # int64
    evaluator: np.ndarray  # object: bytes or None
    pending: np.ndarray  # object: bytes
    pending_values: np.ndarray  # object: str or None
    last: np.ndarray  # object: str or None

    @staticmethod
    def of(keys: np.ndarray, state: pd.DataFrame, at: np.ndarray) -> tuple[_Keys, pd.DataFrame]:
        """``keys`` (unique) with their rows in ``state`` (``at``: each row's position in
        ``keys``, -1 for none), and the state's other rows."""
        n = len(keys)
        found = _Keys(keys, np.full(n, NO_TIME, np.int64), np.full(n, None, object),
                      np.full(n, b"", object), np.full(n, None, object), np.full(n, None, object))
        mine = at >= 0
        rows = state[mine]
        for name in ("max_t", "evaluator", "pending", "pending_values", "last"):
            getattr(found, name)[at[mine]] = rows[name].to_numpy()
        return found, state[~mine]


@dataclass
class _Run:
    """The events of one key released in a step, in (event time, arrival) order."""

    key: Any
    evaluator: bytes | None
    ready: list[tuple[int, int, dict]]  # (event time, arrival seq, item)


#: Per run: the outputs that may be emitted (index in the run, outcome) and the new state.
Evaluated = tuple[list[tuple[int, Outcome]], bytes]


@dataclass(frozen=True)
class _Released:
    """The events released in a step, sorted by (key, event time, arrival): one run per key,
    run ``r`` being ``events[bounds[r]:bounds[r + 1]]``."""

    key: np.ndarray  # per run
    evaluator: np.ndarray  # per run: the state before it (bytes or None)
    events: _Events
    bounds: np.ndarray  # int64[runs + 1]

    def __len__(self) -> int:
        return len(self.key)

    def run(self, r: int, fields: tuple[str, ...]) -> _Run:
        """Run ``r`` with its items as dicts, for the interpreter."""
        lo, hi = int(self.bounds[r]), int(self.bounds[r + 1])
        columns = [self.events.python(j, lo, hi) for j in range(len(fields))]
        items = [dict(zip(fields, values, strict=True)) for values in zip(*columns, strict=True)]
        items = items if fields else [{} for _ in range(hi - lo)]
        return _Run(self.key[r], self.evaluator[r], list(zip(
            self.events.t[lo:hi].tolist(), self.events.seq[lo:hi].tolist(), items, strict=True)))


@dataclass(frozen=True)
class _Evaluated:
    """Some runs evaluated: their new states and, by released event, the value outputs that may
    be emitted (in mode ``changes``, a kernel already drops values equal to the one before)."""

    runs: np.ndarray  # int64
    states: list[bytes]  # per run of ``runs``
    events: np.ndarray  # int64: positions in the released events
    values: np.ndarray  # float64: the ``value`` column (NaN: not a number)
    texts: np.ndarray  # object: the ``value_json`` column


def _objects(values: list[Any]) -> np.ndarray:
    """``values`` as an object array (bytes kept whole, sequences not unpacked)."""
    return np.fromiter(values, dtype=object, count=len(values))


def _float_texts(values: np.ndarray) -> list[str]:
    """``json.dumps`` of each float."""
    texts = list(map(float.__repr__, values.tolist()))
    for i in np.flatnonzero(~np.isfinite(values)):
        texts[i] = _NON_FINITE[texts[i]]
    return texts


def _texts(kind: Kind, ints: np.ndarray, floats: np.ndarray, used: list[int]) -> list[str]:
    """``json.dumps(value, default=str)`` of each kernel output value of ``kind``, whose leaves
    are the next int and float slots (``used``: the slots taken so far)."""
    if kind == "u":
        return [json.dumps(UNIT, default=str)] * len(ints)
    if isinstance(kind, tuple):
        parts = [_texts(k, ints, floats, used) for k in kind]
        return ["[" + ", ".join(row) + "]" for row in zip(*parts, strict=True)] if parts \
            else ["[]"] * len(ints)
    if kind == "f":
        used[1] += 1
        return _float_texts(floats[:, used[1] - 1])
    used[0] += 1
    column = ints[:, used[0] - 1]
    return np.where(column != 0, "true", "false").tolist() if kind == "b" \
        else list(map(str, column.tolist()))


def _kernel_values(kernel: Kernel, result: KernelRun, rows: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The ``value`` and ``value_json`` of the kernel's value outputs after items ``rows``."""
    values, texts = np.full(len(rows), np.nan), np.empty(len(rows), dtype=object)
    otype = result.otype[rows]
    for number in np.unique(otype):
        at = np.flatnonzero(otype == number)
        kind = kernel.out_kinds[number]
        ints, floats = result.ints[rows[at]], result.floats[rows[at]]
        texts[at] = _texts(kind, ints, floats, [0, 0])
        if kind == "i":
            values[at] = ints[:, 0]
        elif kind == "f":
            values[at] = floats[:, 0]
    return values, texts


class QreOperator(KeyedOperator):
    """The keyed QRE operator (see module docstring)."""

    version = "3"

    def __init__(self, spec: QreSpec, name: str = "qre"):
        self.spec, self.name, self.key = spec, name, spec.key
        self.term: Term = parse(spec.text)
        found = explore(self.term)
        self.automaton: Automaton | None = found if isinstance(found, Automaton) else None
        strong, _ = strongly_typed(self.term)
        self.engine = CompiledEvaluator() if strong else DerivativeEvaluator
        self.fields = tuple(sorted(self.term.fields))
        #: A buffered event in ``pending``: event time, arrival, per field a kind and payload.
        self.record = np.dtype([("t", "<i8"), ("seq", "<i8"), *(
            (f"{part}{j}", typ) for j in range(len(self.fields))
            for part, typ in (("kind", "i1"), ("payload", "<i8")))])
        self._kernels: dict[tuple[str, ...], Kernel | None] = {}
        key_type = COLUMN_TYPES[spec.key_type]
        self.state_codec = StateCodec(pa.schema([
            (self.key, key_type), ("max_t", pa.int64()), ("evaluator", pa.binary()),
            ("pending", pa.binary()), ("pending_values", pa.string()), ("last", pa.string())]),
            [self.key])
        self.output_schema = pa.schema([
            (self.key, key_type), ("event_time", COLUMN_TYPES["timestamp"]),
            ("arrival_seq", pa.int64()), ("value", pa.float64()), ("value_json", pa.string())])
        self.output_keys = [self.key] if spec.output == "final" else [self.key, "arrival_seq"]

    def __reduce__(self) -> tuple[Any, ...]:
        return (QreOperator, (self.spec, self.name))  # rebuilt, not pickled: holds compiled code

    def init(self) -> pd.DataFrame:
        return self.state_codec.schema.empty_table().to_pandas()

    def _load(self, blob: bytes | None) -> State:
        if self.automaton is not None:
            return self.automaton.start() if blob is None else self.automaton.load(blob)
        return self.engine.start(self.term) if blob is None else pickle.loads(blob)

    def _dump(self, state: State) -> bytes:
        if self.automaton is not None:
            return self.automaton.dump(state)  # type: ignore[arg-type]
        return pickle.dumps(state)

    # -- the buffer ------------------------------------------------------------------------

    def _read(self, batch: pd.DataFrame, order: np.ndarray, others: list[Any]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Kinds, payloads and nulls of the fields of the events ``batch.iloc[order]``: (N, F)
        arrays (a field the events lack is null everywhere)."""
        shape = (len(order), len(self.fields))
        kind, payload = np.zeros(shape, np.int8), np.zeros(shape, np.int64)
        missing = np.ones(shape, np.bool_)
        for j, field in enumerate(self.fields):
            if field in self.spec.fields and field in batch:
                values = _column(batch, field, self.spec)
                missing[:, j] = values.isna().to_numpy()[order]
                kinds, payloads = _classify(values, others)
                kind[:, j], payload[:, j] = kinds[order], payloads[order]
        return kind, payload, missing

    def _unpack(self, keys: _Keys) -> _Events:
        """The buffered events of ``keys`` (key number: position in ``keys``)."""
        counts = np.fromiter(map(len, keys.pending), np.int64, len(keys.key)) \
            // self.record.itemsize
        records = np.frombuffer(b"".join(keys.pending), dtype=self.record)
        code = np.repeat(np.arange(len(keys.key)), counts)
        kind = np.stack([records[f"kind{j}"] for j in range(len(self.fields))], axis=1) \
            if self.fields else np.zeros((len(records), 0), np.int8)
        payload = np.stack([records[f"payload{j}"] for j in range(len(self.fields))], axis=1) \
            if self.fields else np.zeros((len(records), 0), np.int64)
        others: list[Any] = []
        offset = np.zeros(len(keys.key), np.int64)
        for k in np.flatnonzero(pd.notna(keys.pending_values)):
            offset[k] = len(others)
            others += json.loads(keys.pending_values[k])
        if others:
            payload = payload + np.where(kind == OTHER, offset[code][:, None], 0)
        return _Events(code, records["t"].copy(), records["seq"].copy(), kind, payload, others)

    def _pack(self, kept: _Events, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``pending`` and ``pending_values`` of ``n`` keys buffering ``kept`` (sorted by key,
        event time and arrival)."""
        records = np.empty(len(kept), dtype=self.record)
        records["t"], records["seq"] = kept.t, kept.seq
        payload = kept.payload.copy()
        values = np.full(n, None, dtype=object)
        rows, cols = np.nonzero(kept.kind == OTHER)
        if len(rows):
            owner = kept.code[rows]
            payload[rows, cols] = np.arange(len(rows)) - np.searchsorted(owner, owner)
            for k in np.unique(owner):
                mine = owner == k
                values[k] = json.dumps([kept.others[p] for p in kept.payload[rows[mine],
                                                                                cols[mine]]],
                                       sort_keys=True, default=str)
        for j in range(len(self.fields)):
            records[f"kind{j}"], records[f"payload{j}"] = kept.kind[:, j], payload[:, j]
        data = records.tobytes()
        ends = np.cumsum(np.bincount(kept.code, minlength=n)) * self.record.itemsize
        starts = (ends - np.diff(ends, prepend=0)).tolist()
        return _objects([data[a:b] for a, b in zip(starts, ends.tolist(), strict=True)]), values

    def _advance(self, keys: _Keys, arrived: _Events, watermark: np.ndarray
                 ) -> tuple[_Keys, pd.DataFrame]:
        """Buffer ``arrived``, release every key's events up to its watermark and evaluate them:
        the keys' new state and the output."""
        events = self._unpack(keys).concat(arrived)
        order = order_by_code(events.code, events.t, events.seq)
        ready = events.t[order] <= watermark[events.code[order]]
        evaluator, last, output = self._release(keys, events.take(order[ready]))
        pending, values = self._pack(events.take(order[~ready]), len(keys.key))
        return _Keys(keys.key, keys.max_t, evaluator, pending, values, last), output

    # -- evaluation ------------------------------------------------------------------------

    def _release(self, keys: _Keys, released: _Events
                 ) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
        """Feed each key's released events to its evaluator: the new evaluator states, last
        outputs, and the output rows."""
        if not len(released):
            return keys.evaluator, keys.last, self._frame(keys.key[:0], [], [], [], [])
        starts = np.flatnonzero(np.diff(released.code, prepend=-1))
        owner = released.code[starts]
        runs = _Released(keys.key[owner], keys.evaluator[owner], released,
                         np.append(starts, len(released)))
        done = list((self._kernel_runs(runs) if self.automaton is not None else {}).values())
        covered = np.zeros(len(runs), np.bool_)
        for part in done:
            covered[part.runs] = True
        rest = np.flatnonzero(~covered)  # interpreted in key order (as is an error they raise)
        rest = rest[_key_order(runs.key[rest], np.zeros(len(rest), np.int64))]
        done += [self._interpreted(runs, r) for r in rest.tolist()]
        evaluator, last = keys.evaluator.copy(), keys.last.copy()
        for part in done:
            evaluator[owner[part.runs]] = _objects(part.states)
        if self.spec.output == "final":
            ends = runs.bounds[1:] - 1
            last[owner] = [f"[{t}, {seq}]" for t, seq in zip(
                released.t[ends].tolist(), released.seq[ends].tolist(), strict=True)]
            return evaluator, last, self._frame(keys.key[:0], [], [], [], [])
        events = np.concatenate([part.events for part in done])
        order = np.argsort(events, kind="stable")
        events = events[order]
        values = np.concatenate([part.values for part in done])[order]
        texts = np.concatenate([part.texts for part in done])[order]
        run = np.searchsorted(runs.bounds, events, side="right") - 1
        ends = np.diff(run, append=len(runs)) != 0  # each run's last output
        keep = np.ones(len(events), np.bool_)
        if self.spec.output == "changes":  # a value is emitted when it differs from the last
            previous = np.empty(len(events), dtype=object)
            previous[1:] = texts[:-1]
            firsts = np.diff(run, prepend=-1) != 0
            previous[firsts] = last[owner[run[firsts]]]
            keep = texts != previous
        last[owner[run[ends]]] = texts[ends]
        events, run = events[keep], run[keep]
        return evaluator, last, self._frame(keys.key[owner[run]], released.t[events],
                                            released.seq[events], values[keep], texts[keep])

    def _interpreted(self, runs: _Released, r: int) -> _Evaluated:
        candidates, state = self._interpret(runs.run(r, self.fields))
        return _Evaluated(np.array([r]), [state],
                          np.array([runs.bounds[r] + i for i, _ in candidates], np.int64),
                          np.array([_value(o) for _, o in candidates], np.float64),
                          _objects([json.dumps(o.value, default=str) for _, o in candidates]))

    def _interpret(self, run: _Run) -> Evaluated:
        state, candidates = self._load(run.evaluator), []
        for i, (_, _, item) in enumerate(run.ready):
            state = state.step(item)
            if self.spec.output != "final":
                outcome = state.output()
                if outcome.kind == "value":
                    candidates.append((i, outcome))
        return candidates, self._dump(state)

    def _kernel(self, kinds: tuple[str, ...]) -> Kernel | None:
        if kinds not in self._kernels:
            self._kernels[kinds] = kernel_for(self.term, dict(zip(self.fields, kinds,
                                                                  strict=True)))
        return self._kernels[kinds]

    def _kernel_runs(self, runs: _Released) -> dict[tuple[str, ...], _Evaluated]:
        """The runs the kernel evaluates, per combination of the kinds of the fields' values:
        one call each (runs with mixed or non-numeric values are left to the interpreter)."""
        starts = runs.bounds[:-1]
        low = np.stack([np.minimum.reduceat(runs.events.kind[:, j], starts)
                        for j in range(len(self.fields))], axis=1) \
            if self.fields else np.zeros((len(runs), 0), np.int8)
        high = np.stack([np.maximum.reduceat(runs.events.kind[:, j], starts)
                         for j in range(len(self.fields))], axis=1) \
            if self.fields else low
        members = np.flatnonzero(((low == high) & (low != OTHER)).all(axis=1))
        combo = np.zeros(len(members), np.int64)  # numbers the combinations of kinds
        for j in range(len(self.fields)):
            combo = pd.factorize(combo * 3 + low[members, j])[0]
        done = {}
        for number in range(int(combo.max()) + 1 if len(combo) else 0):
            group = members[combo == number]
            kinds = tuple(_FIELD_KINDS[c] for c in low[group[0]].tolist())
            kernel = self._kernel(kinds)
            if kernel is not None:
                done[kinds] = self._on_kernel(kernel, runs, group)
        return done

    def _on_kernel(self, kernel: Kernel, runs: _Released, members: np.ndarray) -> _Evaluated:
        """One kernel call over the runs ``members``; a run the kernel cannot take (its state
        does not fit this kernel) or hands back (a step needs Python) is left out."""
        lengths = np.diff(runs.bounds)
        rows = np.arange(len(runs.events)) if len(members) == len(runs) else \
            np.flatnonzero(np.repeat(np.isin(np.arange(len(runs)), members), lengths))
        bounds = np.append(0, np.cumsum(lengths[members]))
        states, ok = kernel.load(list(runs.evaluator[members]))
        columns = {field: runs.events.column(j, kind, rows)
                   for j, (field, kind) in enumerate(zip(self.fields, kernel.kinds, strict=True))}
        result = kernel.run(columns, bounds, states, self.spec.output)
        good = ok & (result.failed < 0)
        final = result.states
        states = kernel.dumps(KernelStates(final.state[good], final.ints[good], final.floats[good]))
        if self.spec.output == "final":
            hits = np.zeros(0, np.int64)
        else:
            emit = (result.kind == 1) & np.repeat(good, lengths[members])
            if self.spec.output == "changes":
                emit &= ~result.same  # equal to the previous value: never emitted
            hits = np.flatnonzero(emit)
        values, texts = _kernel_values(kernel, result, hits)
        return _Evaluated(members[good], states, rows[hits], values, texts)

    # -- steps -----------------------------------------------------------------------------

    def step(self, state: pd.DataFrame, batch: pd.DataFrame) -> StepResult:
        lateness = self.spec.lateness_us
        # Number the batch's keys (in order of appearance), then the state's keys after them.
        values = batch[self.key].to_numpy()
        codes, uniques = pd.factorize(np.concatenate([values, state[self.key].to_numpy()]),
                                      use_na_sentinel=False)
        code = codes[:len(batch)].astype(np.int64)
        keys = uniques[:code.max() + 1 if len(code) else 0]
        prior, rest = _Keys.of(keys, state, np.where(codes[len(batch):] < len(keys),
                                                     codes[len(batch):], -1))
        order = order_by_code(code, batch[SEQ].to_numpy(dtype="int64"))
        code = code[order]
        t = batch[TIME].to_numpy(dtype="int64")[order]
        seq = batch[SEQ].to_numpy(dtype="int64")[order]
        others: list[Any] = []
        kind, payload, missing = self._read(batch, order, others)
        bad = missing.any(axis=1)
        # Max event time per key before each event (rejected events do not count; late ones
        # do, as they are below the max and change no max).
        before, running = max_before(code, np.where(bad, NO_TIME, t), prior.max_t)
        late = ~bad & (before != NO_TIME) & (t < before - lateness)
        max_t = np.maximum(prior.max_t, running[np.diff(code, append=len(keys)) != 0])
        on_time = ~bad & ~late
        arrived = _Events(code[on_time], t[on_time], seq[on_time], kind[on_time],
                          payload[on_time], others)
        after, output = self._advance(
            _Keys(keys, max_t, prior.evaluator, prior.pending, prior.pending_values, prior.last),
            arrived, max_t - lateness)
        rows = self._rows(after)
        new_state = pd.concat([rest, rows], ignore_index=True) if len(rest) else rows
        late_rows = np.flatnonzero(late)
        late_rows = late_rows[_key_order(values[order[late_rows]], seq[late_rows])]
        late_frame = batch.iloc[order[late_rows]].copy()
        late_frame[REASON] = [
            f"event time {ti} us is below the key's watermark {bi - lateness} us (max event "
            f"time {bi} us minus lateness {lateness} us)"
            for ti, bi in zip(t[late_rows].tolist(), before[late_rows].tolist(), strict=True)]
        bad_rows = np.flatnonzero(bad)
        bad_rows = bad_rows[_key_order(values[order[bad_rows]], seq[bad_rows])]
        rejected = batch.iloc[order[bad_rows]].copy()
        patterns, which = np.unique(missing[bad_rows], axis=0, return_inverse=True)
        reasons = [_reason([f for f, m in zip(self.fields, p, strict=True) if m])
                   for p in patterns.tolist()]
        rejected[REASON] = [reasons[w] for w in which.ravel().tolist()]
        return StepResult(new_state, output, late_frame.reset_index(drop=True),
                          rejected.reset_index(drop=True))

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        keys, _ = _Keys.of(state[self.key].to_numpy(), state, np.arange(len(state)))
        arrived = _Events(*(np.zeros(0, np.int64) for _ in range(3)),
                          np.zeros((0, len(self.fields)), np.int8),
                          np.zeros((0, len(self.fields)), np.int64), [])
        after, output = self._advance(keys, arrived, np.full(len(keys.key), END_OF_INPUT))
        if self.spec.output != "final":
            return output
        rows, times, values = [], [], []
        for k, (blob, last) in enumerate(zip(after.evaluator, after.last, strict=True)):
            if blob is not None:
                outcome = self._load(blob).output()
                if outcome.kind == "value":
                    rows.append(k)
                    times.append(json.loads(last))
                    values.append(outcome)
        at = np.array(times, dtype=np.int64).reshape(-1, 2)
        return self._frame(after.key[rows], at[:, 0], at[:, 1], [_value(o) for o in values],
                           [json.dumps(o.value, default=str) for o in values])

    def _rows(self, keys: _Keys) -> pd.DataFrame:
        """State rows of ``keys``."""
        return pd.DataFrame({self.key: keys.key, "max_t": keys.max_t, "evaluator": keys.evaluator,
                             "pending": keys.pending, "pending_values": keys.pending_values,
                             "last": keys.last})

    def _frame(self, key: np.ndarray, event_time: Any, arrival_seq: Any, value: Any,
               value_json: Any) -> pd.DataFrame:
        """Output rows, in ``output_keys`` order (one row per key in mode ``final``)."""
        arrival_seq = np.asarray(arrival_seq, dtype=np.int64)
        rows = _key_order(key, arrival_seq)
        return pd.DataFrame({
            self.key: key[rows], "event_time": np.asarray(event_time, dtype=np.int64)[rows],
            "arrival_seq": arrival_seq[rows], "value": np.asarray(value, dtype=np.float64)[rows],
            "value_json": _objects(list(value_json))[rows]})


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
    items = _items(events, spec)
    rows, late, rejected = [], [], []
    by_key: dict[object, list] = {}
    for i, (key, t, seq) in enumerate(zip(events[spec.key], events[TIME], events[SEQ],
                                          strict=True)):
        by_key.setdefault(key, []).append((int(seq), int(t), items[i]))
    for key, evs in by_key.items():
        evs.sort()
        on_time, max_t = [], None
        for seq, t, item in evs:
            if rejection(term.fields, item):
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
            if on_time and outcomes[-1].kind == "value":
                t, seq, _ = on_time[-1]
                rows.append(_row(spec.key, key, t, seq, outcomes[-1]))
            continue
        previous = None
        for (t, seq, _), outcome in zip(on_time, outcomes, strict=True):
            if outcome.kind != "value":
                continue
            row = _row(spec.key, key, t, seq, outcome)
            if spec.output == "changes" and row["value_json"] == previous:
                continue
            previous = row["value_json"]
            rows.append(row)
    columns = [spec.key, "event_time", "arrival_seq", "value", "value_json"]
    return pd.DataFrame(rows, columns=columns), sorted(late), sorted(rejected)


__all__ = ["OUTPUT_MODES", "QreOperator", "QreSpec", "parse_qre_query", "qre_reference",
           "rejection"]

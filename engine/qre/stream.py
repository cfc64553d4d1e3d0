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
from .compiled import Automaton, CompiledEvaluator, explore
from .derivative import DerivativeEvaluator
from .errors import QREError
from .evaluator import State, evaluate
from .kernel import Kernel, column_kind, kernel_for
from .strong import strongly_typed
from .terms import Term
from .text import parse
from .values import Outcome

OUTPUT_MODES = ("every", "changes", "final")
NO_TIME = -(2**62)
#: Watermark of ``finish``: every buffered event is released.
END_OF_INPUT = 2**62


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
                   fields=tuple(c for c in recording.columns if c in term.fields))


def _value(outcome) -> float | None:
    v = outcome.value
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _dump_pending(pending: list) -> str:
    """Buffered events as canonical JSON (equal buffers give equal bytes)."""
    return json.dumps(sorted(pending, key=lambda p: (p[0], p[1])), sort_keys=True,
                      default=str)


def rejection(fields: frozenset[str], item: dict) -> str | None:
    """Why the query cannot read ``item`` (a field it reads is missing or null), else None."""
    missing = sorted(f for f in fields if item.get(f) is None)
    if not missing:
        return None
    return "the query reads " + ", ".join(f"{f!r}" for f in missing) + " but the event has " + (
        "no value for it" if len(missing) == 1 else "no values for them")


def _row(key_column: str, key, t: int, seq: int, outcome) -> dict:
    return {key_column: key, "event_time": t, "arrival_seq": seq, "value": _value(outcome),
            "value_json": json.dumps(outcome.value, default=str)}


def _items(events: pd.DataFrame, spec: QreSpec) -> list[dict]:
    """Events as plain-Python dicts (JSON-able; NaN and NaT become None)."""
    columns = {}
    for col in (f for f in spec.fields if f in events):
        values = events[col]
        if col in spec.timestamp_columns and pd.api.types.is_datetime64_any_dtype(values):
            values = pd.to_datetime(values, utc=True).astype("int64") // 1000
            values = values.where(events[col].notna())
        columns[col] = [None if pd.isna(v) else v for v in values.tolist()]
    return [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)] \
        if columns else [{} for _ in range(len(events))]


@dataclass
class _Run:
    """The events of one key released in a step, in (event time, arrival) order."""

    key: Any
    row: dict
    ready: list  # [event time, arrival seq, item]


#: Per run: the outputs that may be emitted (index in the run, outcome) and the new state.
Evaluated = tuple[list[tuple[int, Outcome]], bytes]


class QreOperator(KeyedOperator):
    """The keyed QRE operator (see module docstring)."""

    version = "2"

    def __init__(self, spec: QreSpec, name: str = "qre"):
        self.spec, self.name, self.key = spec, name, spec.key
        self.term: Term = parse(spec.text)
        found = explore(self.term)
        self.automaton: Automaton | None = found if isinstance(found, Automaton) else None
        strong, _ = strongly_typed(self.term)
        self.engine = CompiledEvaluator() if strong else DerivativeEvaluator
        self.fields = tuple(sorted(self.term.fields))
        key_type = COLUMN_TYPES[spec.key_type]
        self.state_codec = StateCodec(pa.schema([
            (self.key, key_type), ("max_t", pa.int64()), ("evaluator", pa.binary()),
            ("pending", pa.string()), ("last", pa.string())]), [self.key])
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

    def _emit(self, key, t: int, seq: int, outcome, last: str | None
              ) -> tuple[dict | None, str | None]:
        if outcome.kind != "value":
            return None, last
        row = _row(self.key, key, t, seq, outcome)
        if self.spec.output == "changes" and row["value_json"] == last:
            return None, last
        return row, row["value_json"]

    def _release(self, releases: list[tuple[Any, dict, int]]) -> list[dict]:
        """Feed each key's buffered events up to its watermark to its evaluator."""
        runs = []
        for key, row, watermark in releases:
            pending = json.loads(row["pending"])
            ready = sorted((p for p in pending if p[0] <= watermark), key=lambda p: (p[0], p[1]))
            if ready:
                row["pending"] = _dump_pending([p for p in pending if p[0] > watermark])
                runs.append(_Run(key, row, ready))
        evaluated = self._kernel_runs(runs) if self.automaton is not None else {}
        out = []
        for n, run in enumerate(runs):
            candidates, run.row["evaluator"] = evaluated.get(n) or self._interpret(run)
            last = run.row["last"]
            for i, outcome in candidates:
                t, seq, _ = run.ready[i]
                emitted, last = self._emit(run.key, t, seq, outcome, last)
                if emitted:
                    out.append(emitted)
            if self.spec.output == "final":
                t, seq, _ = run.ready[-1]
                last = json.dumps([t, seq], default=str)
            run.row["last"] = last
        return out

    def _interpret(self, run: _Run) -> Evaluated:
        state, candidates = self._load(run.row["evaluator"]), []
        for i, (_, _, item) in enumerate(run.ready):
            state = state.step(item)
            if self.spec.output != "final":
                outcome = state.output()
                if outcome.kind == "value":
                    candidates.append((i, outcome))
        return candidates, self._dump(state)

    def _kernel_runs(self, runs: list[_Run]) -> dict[int, Evaluated]:
        """The runs the kernel evaluates, by position: one call per combination of the kinds of
        the fields' values (runs with mixed or non-numeric values are left to the interpreter)."""
        groups: dict[tuple[str | None, ...], list[int]] = {}
        for n, run in enumerate(runs):
            kinds = tuple(column_kind([item[f] for _, _, item in run.ready]) for f in self.fields)
            if None not in kinds:
                groups.setdefault(kinds, []).append(n)
        done: dict[int, Evaluated] = {}
        for kinds, members in groups.items():
            kernel = kernel_for(self.term, dict(zip(self.fields, kinds, strict=True)))
            if kernel is not None:
                evaluated = self._on_kernel(kernel, [runs[n] for n in members])
                done.update((n, e) for n, e in zip(members, evaluated, strict=True)
                            if e is not None)
        return done

    def _on_kernel(self, kernel: Kernel, group: list[_Run]) -> list[Evaluated | None]:
        """One kernel call over ``group``; None for a run the kernel cannot take or hands back
        (its state does not fit this kernel, or a step needs Python)."""
        states, ok = kernel.load([run.row["evaluator"] for run in group])
        bounds = np.cumsum([0, *(len(run.ready) for run in group)])
        columns = {f: np.array([item[f] for run in group for _, _, item in run.ready])
                   for f in self.fields}
        result = kernel.run(columns, bounds, states, self.spec.output)
        emit = result.kind == 1
        if self.spec.output == "changes":
            emit &= ~result.same  # equal to the previous value: never emitted
        hits = np.flatnonzero(emit)
        cuts = np.searchsorted(hits, bounds)
        return [([(int(i - bounds[m]), kernel.outcome(result, i))
                  for i in hits[cuts[m]:cuts[m + 1]]], kernel.dump(result.states, m))
                if ok[m] and result.failed[m] < 0 else None for m in range(len(group))]

    def step(self, state: pd.DataFrame, batch: pd.DataFrame) -> StepResult:
        lateness = self.spec.lateness_us
        rows = {r[self.key]: r for r in state.to_dict("records")}
        outputs, late_idx, reasons, bad_idx, bad_reasons = [], [], [], [], []
        releases = []
        events = batch.sort_values([self.key, SEQ], kind="stable")
        items = _items(events, self.spec)
        times = events[TIME].to_numpy(dtype="int64")
        seqs = events[SEQ].to_numpy(dtype="int64")
        keys = events[self.key].to_numpy()
        start = 0
        while start < len(events):
            stop = start
            while stop < len(events) and keys[stop] == keys[start]:
                stop += 1
            key = keys[start]
            row = rows.get(key) or {self.key: key, "max_t": NO_TIME, "evaluator": None,
                                    "pending": "[]", "last": None}
            pending = json.loads(row["pending"])
            max_t = int(row["max_t"])
            for i in range(start, stop):
                t = int(times[i])
                why = rejection(self.term.fields, items[i])
                if why:
                    bad_idx.append(i)
                    bad_reasons.append(why)
                    continue
                if max_t != NO_TIME and t < max_t - lateness:
                    late_idx.append(i)
                    reasons.append(f"event time {t} us is below the key's watermark "
                                   f"{max_t - lateness} us (max event time {max_t} us minus "
                                   f"lateness {lateness} us)")
                    continue
                pending.append((t, int(seqs[i]), items[i]))
                max_t = max(max_t, t)
            row["pending"], row["max_t"] = _dump_pending(pending), max_t
            releases.append((key, row, max_t - lateness))
            rows[key] = row
            start = stop
        outputs += self._release(releases)
        late = events.iloc[late_idx].copy()
        late[REASON] = reasons
        rejected = events.iloc[bad_idx].copy()
        rejected[REASON] = bad_reasons
        new_state = pd.DataFrame(list(rows.values()), columns=self.state_codec.schema.names)
        return StepResult(new_state, self._frame(outputs), late.reset_index(drop=True),
                          rejected.reset_index(drop=True))

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        rows = state.to_dict("records")
        outputs = self._release([(row[self.key], row, END_OF_INPUT) for row in rows])
        for row in rows:
            if self.spec.output == "final" and row["evaluator"] is not None:
                t, seq = json.loads(row["last"])
                emitted, _ = self._emit(row[self.key], t, seq,
                                        self._load(row["evaluator"]).output(), None)
                if emitted:
                    outputs.append(emitted)
        return self._frame(outputs)

    def _frame(self, rows: list[dict]) -> pd.DataFrame:
        frame = pd.DataFrame(rows, columns=self.output_schema.names)
        return frame.sort_values(self.output_keys, kind="stable").reset_index(drop=True)


def qre_reference(events: pd.DataFrame, spec: QreSpec
                  ) -> tuple[pd.DataFrame, list[int], list[int]]:
    """Per key: rejected and late events by the arrival-order rule, then the derivative evaluator
    from scratch over the on-time events in (event time, arrival) order, projected by the output
    mode. Returns (output, late arrival seqs, rejected arrival seqs)."""
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
        outcomes = evaluate(term, [e[2] for e in on_time])[1:]
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

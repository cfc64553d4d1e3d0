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

Released events are evaluated by ``dispatch.RunEvaluator`` (the numba kernel or an
interpreter). The catalog side is ``query_spec``, the event columns and buffer format ``events``,
the checking reference ``stream_reference``.

A step works on whole columns: the batch is sorted by (key, arrival), rejection and lateness are
array operations, and the buffered events of every key are released together. The state has one
row per key: ``max_t``, the evaluator state, ``last`` (the last emitted ``value_json``; in mode
``final`` the ``[event time, arrival]`` of the last released event) and the buffered events,
``pending`` and ``pending_values`` (``events.PendingBuffer``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..lateness import late_reasons, late_split
from ..operator import REASON, SEQ, TIME, KeyedOperator, StateCodec, StepResult
from ..ordering import END_OF_INPUT, NO_TIME, in_order, order_by_code
from ..specs import COLUMN_TYPES
from .dispatch import EMITTED, Released, RunEvaluator, json_of, value_of
from .events import (
    Events,
    PendingBuffer,
    classify,
    field_values,
    items_of,
    key_order,
    missing_reason,
    objects,
)
from .item_checks import ItemCheck
from .query_spec import QreSpec
from .text import parse


@dataclass(frozen=True)
class Keys:
    """Per key of a step: its state row's columns (a key new to the state has no evaluator, no
    buffered events and no last output)."""

    key: np.ndarray
    max_t: np.ndarray  # int64
    evaluator: np.ndarray  # object: bytes or None
    pending: np.ndarray  # object: bytes
    pending_values: np.ndarray  # object: str or None
    last: np.ndarray  # object: str or None

    @staticmethod
    def of(keys: np.ndarray, state: pd.DataFrame, at: np.ndarray) -> tuple[Keys, pd.DataFrame]:
        """``keys`` (unique) with their rows in ``state`` (``at``: each row's position in
        ``keys``, -1 for none), and the state's other rows."""
        n = len(keys)
        found = Keys(keys, np.full(n, NO_TIME, np.int64), np.full(n, None, object),
                      np.full(n, b"", object), np.full(n, None, object), np.full(n, None, object))
        mine = np.flatnonzero(at >= 0)
        for name in ("max_t", "evaluator", "pending", "pending_values", "last"):
            getattr(found, name)[at[mine]] = state[name].to_numpy()[mine]
        return found, state.iloc[np.flatnonzero(at < 0)] if len(mine) < len(state) \
            else state.iloc[:0]



class QreOperator(KeyedOperator):
    """The keyed QRE operator (see module docstring); ``use_kernel=False`` evaluates every run
    on the interpreter (same outputs and states, slower)."""

    version = "4"

    def __init__(self, spec: QreSpec, name: str = "qre", use_kernel: bool = True):
        self.spec, self.name, self.key = spec, name, spec.key
        self.use_kernel = use_kernel
        self.term = parse(spec.text)
        self.fields = tuple(sorted(self.term.fields))
        self.runs = RunEvaluator(self.term, self.fields, spec.output, use_kernel)
        self.buffer = PendingBuffer(len(self.fields))
        self.checks = ItemCheck(self.term, spec.column_types())
        key_type = COLUMN_TYPES[spec.key_type]
        self.state_codec = StateCodec(pa.schema([
            (self.key, key_type), ("max_t", pa.int64()), ("evaluator", pa.binary()),
            ("pending", pa.binary()), ("pending_values", pa.string()), ("last", pa.string())]),
            [self.key])
        self.output_schema = pa.schema([
            (self.key, key_type), ("event_time", COLUMN_TYPES["timestamp"]),
            ("arrival_seq", pa.int64()), ("value", pa.float64()), ("value_json", pa.string())])
        self.output_keys = [self.key] if spec.output == "final" else [self.key, "arrival_seq"]
        #: Key values only group and order the events unless the query reads the key column.
        self.codes_keys = self.key not in spec.fields
        #: The last batch's columns and dtypes (by id: the frame keeps them alive) and its
        #: events without rows (:func:`_no_events`): batches of one run share them.
        self._no_events: tuple[tuple[Any, ...], pd.DataFrame] | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt, not pickled: it holds compiled code.
        return (QreOperator, (self.spec, self.name, self.use_kernel))

    def init(self) -> pd.DataFrame:
        return self.state_codec.empty()

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
                values = field_values(batch, field, self.spec)
                missing[:, j] = values.isna().to_numpy()[order]
                kinds, payloads = classify(values, others)
                kind[:, j], payload[:, j] = kinds[order], payloads[order]
        return kind, payload, missing

    def _rejections(self, batch: pd.DataFrame, order: np.ndarray, missing: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Which events of ``batch.iloc[order]`` are rejected, and why (None: not rejected): a
        field the query reads is null, or the query cannot evaluate it (``item_checks``)."""
        reason = np.full(len(order), None, dtype=object)
        bad = missing.any(axis=1)
        lacking = np.flatnonzero(bad)
        if len(lacking):
            patterns, which = np.unique(missing[lacking], axis=0, return_inverse=True)
            texts = [missing_reason([f for f, m in zip(self.fields, p, strict=True) if m])
                     for p in patterns.tolist()]
            reason[lacking] = [texts[w] for w in which.ravel().tolist()]
        if self.checks.risky:
            rows = np.flatnonzero(~bad)
            items = items_of(batch.iloc[order[rows]], self.spec)
            problems = [self.checks.problem(item) for item in items]
            reason[rows] = problems
            bad[rows] = [p is not None for p in problems]
        return bad, reason

    def _advance(self, keys: Keys, arrived: Events, watermark: np.ndarray
                 ) -> tuple[Keys, pd.DataFrame]:
        """Buffer ``arrived``, release every key's events up to its watermark and evaluate them:
        the keys' new state and the output."""
        buffered = self.buffer.unpack(keys.pending, keys.pending_values)
        events = buffered.concat(arrived) if len(buffered) else arrived
        # (as when no key buffers events and each arrives in time order)
        if in_order([events.code, events.t, events.seq]):
            ready = events.t <= watermark[events.code]
            released = events if ready.all() else events.take(np.flatnonzero(ready))
            kept = events.take(np.flatnonzero(~ready))
        else:
            order = order_by_code(events.code, events.t, events.seq)
            ready = events.t[order] <= watermark[events.code[order]]
            released, kept = events.take(order[ready]), events.take(order[~ready])
        evaluator, last, output = self._release(keys, released)
        pending, values = self.buffer.pack(kept, len(keys.key))
        return Keys(keys.key, keys.max_t, evaluator, pending, values, last), output

    # -- evaluation ------------------------------------------------------------------------

    def _release(self, keys: Keys, released: Events
                 ) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
        """Feed each key's released events to its evaluator: the new evaluator states, last
        outputs, and the output rows."""
        if not len(released):
            return keys.evaluator, keys.last, self._frame(keys.key[:0], [], [], [], [])
        starts = np.flatnonzero(np.diff(released.code, prepend=-1))
        owner = released.code[starts]
        runs = Released(keys.key[owner], keys.evaluator[owner], released,
                        np.append(starts, len(released)))
        done = self.runs.evaluate(runs)
        evaluator, last = keys.evaluator.copy(), keys.last.copy()
        for part in done:
            evaluator[owner[part.runs]] = objects(part.states)
        if self.spec.output == "final":
            ends = runs.bounds[1:] - 1
            last[owner] = [f"[{t}, {seq}]" for t, seq in zip(
                released.t[ends].tolist(), released.seq[ends].tolist(), strict=True)]
            return evaluator, last, self._frame(keys.key[:0], [], [], [], [])
        events = np.concatenate([part.events for part in done])
        values = np.concatenate([part.values for part in done])
        texts = np.concatenate([part.texts for part in done])
        if not in_order([events]):  # several parts (kernel calls, interpreted runs)
            order = np.argsort(events, kind="stable")
            events, values, texts = events[order], values[order], texts[order]
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
        rank, _ = pd.factorize(keys.key, sort=True, use_na_sentinel=False)  # keys' sort order
        return evaluator, last, self._frame(keys.key[owner[run]], released.t[events],
                                            released.seq[events], values[keep], texts[keep],
                                            rank[owner[run]])



    def step(self, state: pd.DataFrame, batch: pd.DataFrame) -> StepResult:
        lateness = self.spec.lateness_us
        # Number the batch's keys (in order of appearance), then the state's keys after them.
        values = batch[self.key].to_numpy()
        codes, uniques = pd.factorize(np.concatenate([values, state[self.key].to_numpy()]),
                                      use_na_sentinel=False)
        code = codes[:len(batch)].astype(np.int64)
        keys = uniques[:code.max() + 1 if len(code) else 0]
        prior, rest = Keys.of(keys, state, np.where(codes[len(batch):] < len(keys),
                                                    codes[len(batch):], -1))
        seq = batch[SEQ].to_numpy(dtype="int64")
        order = order_by_code(code, seq)
        code, seq = code[order], seq[order]
        t = batch[TIME].to_numpy(dtype="int64")[order]
        others: list[Any] = []
        kind, payload, missing = self._read(batch, order, others)
        bad, reason = self._rejections(batch, order, missing)
        split = late_split(code, t, prior.max_t, lateness, skip=bad)
        late, max_t = split.late, split.after
        arrived = Events(code, t, seq, kind, payload, others)
        if bad.any() or late.any():
            arrived = arrived.take(np.flatnonzero(~bad & ~late))
        after, output = self._advance(
            Keys(keys, max_t, prior.evaluator, prior.pending, prior.pending_values, prior.last),
            arrived, max_t - lateness)
        rows = self._rows(after)
        new_state = pd.concat([rest, rows], ignore_index=True) if len(rest) else rows
        late_rows, bad_rows = np.flatnonzero(late), np.flatnonzero(bad)
        late_frame = rejected = None
        if len(late_rows):
            late_rows = late_rows[key_order(values[order[late_rows]], seq[late_rows])]
            late_frame = _with_reasons(batch, order[late_rows], late_reasons(
                t[late_rows], split.before[late_rows], lateness))
        if len(bad_rows):
            bad_rows = bad_rows[key_order(values[order[bad_rows]], seq[bad_rows])]
            rejected = _with_reasons(batch, order[bad_rows], reason[bad_rows].tolist())
        if late_frame is None or rejected is None:  # (most batches: one empty frame for both)
            none = self._none_of(batch)
            late_frame = none if late_frame is None else late_frame
            rejected = none.copy(deep=False) if rejected is None else rejected
        return StepResult(new_state, output, late_frame, rejected)

    def _none_of(self, batch: pd.DataFrame) -> pd.DataFrame:
        """No event of ``batch`` (:func:`_no_events`), built once for the batches of one
        schema."""
        schema = tuple((name, id(dtype)) for name, dtype in batch.dtypes.items())
        if self._no_events is None or self._no_events[0] != schema:
            self._no_events = (schema, _no_events(batch))
        return self._no_events[1].copy(deep=False)

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        keys, _ = Keys.of(state[self.key].to_numpy(), state, np.arange(len(state)))
        arrived = Events.empty(len(self.fields))
        after, output = self._advance(keys, arrived, np.full(len(keys.key), END_OF_INPUT))
        if self.spec.output != "final":
            return output
        rows, times, values = [], [], []
        for k, (blob, last) in enumerate(zip(after.evaluator, after.last, strict=True)):
            if blob is not None:
                outcome = self.runs.load(blob).output()
                if outcome.kind in EMITTED:
                    rows.append(k)
                    times.append(json.loads(last))
                    values.append(outcome)
        at = np.array(times, dtype=np.int64).reshape(-1, 2)
        return self._frame(after.key[rows], at[:, 0], at[:, 1], [value_of(o) for o in values],
                           [json_of(o) for o in values])

    def _rows(self, keys: Keys) -> pd.DataFrame:
        """State rows of ``keys``."""
        return pd.DataFrame({self.key: keys.key, "max_t": keys.max_t, "evaluator": keys.evaluator,
                             "pending": keys.pending, "pending_values": keys.pending_values,
                             "last": keys.last})

    def _frame(self, key: np.ndarray, event_time: Any, arrival_seq: Any, value: Any,
               value_json: Any, rank: np.ndarray | None = None) -> pd.DataFrame:
        """Output rows, in ``output_keys`` order (one row per key in mode ``final``); ``rank``:
        codes of the rows' keys that sort like the keys, when known."""
        arrival_seq = np.asarray(arrival_seq, dtype=np.int64)
        rows = key_order(key, arrival_seq) if rank is None else \
            order_by_code(rank.astype(np.int64), arrival_seq)
        texts = value_json if isinstance(value_json, np.ndarray) and value_json.dtype == object \
            else objects(list(value_json))
        return pd.DataFrame({
            self.key: key[rows], "event_time": np.asarray(event_time, dtype=np.int64)[rows],
            "arrival_seq": arrival_seq[rows], "value": np.asarray(value, dtype=np.float64)[rows],
            "value_json": texts[rows]})


def _no_events(batch: pd.DataFrame) -> pd.DataFrame:
    """No event of ``batch``, with a ``reason`` column: as :func:`_with_reasons` gives it
    without rows, the reason column float (cheaper: no take, no copy, no reindex)."""
    frame = batch.iloc[:0].copy(deep=False)
    frame.insert(len(frame.columns), REASON, np.empty(0, np.float64))
    frame.index = pd.RangeIndex(0)
    return frame


def _with_reasons(batch: pd.DataFrame, rows: np.ndarray, reasons: list[str]) -> pd.DataFrame:
    """The events at positions ``rows`` of ``batch`` (some) with a ``reason`` each (index
    reset)."""
    frame = batch.take(rows)
    frame[REASON] = reasons
    return frame.reset_index(drop=True)

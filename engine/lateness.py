"""Allowed lateness, one policy for every keyed operator that has it (window kinds, QRE).

Per key, events are taken in arrival order (``__seq``). The key's watermark before an event is
the largest event time of the key's earlier events (those counted: not rejected) minus the
lateness; an event whose time is below it is late. Late events change no watermark (they are
below the max). A buffered event is due once its key's watermark is at or past its time.

Two levels: :func:`late_split` over plain columns already grouped by key code in arrival order
(for an operator with its own key numbering, such as the QRE operator, whose rejected rows are
``skip``), and :func:`split_batch` over a batch frame and the keys' :class:`Marks` (what the
window operators call). Late rows get the one reason text of :func:`late_reasons`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .frames import rows_at, take
from .operator import REASON, SEQ, TIME
from .ordering import NO_TIME, max_before, order_by_code


@dataclass(frozen=True)
class LateSplit:
    """Lateness of rows grouped by key code, in arrival order within a key (see
    :func:`late_split`)."""

    before: np.ndarray  # per row: its key's max event time before it (NO_TIME: none)
    late: np.ndarray  # per row: below its key's watermark on arrival
    after: np.ndarray  # per key code: max event time after all rows (the prior where none)


def late_split(code: np.ndarray, t: np.ndarray, prior: np.ndarray, lateness: int,
               skip: np.ndarray | None = None) -> LateSplit:
    """Which rows are late. ``code``: each row's key code, rows grouped by code and in arrival
    order within a code (:func:`arrival_order` gives that order); ``t``: event times;
    ``prior``: each code's max event time before these rows (``NO_TIME`` for none); rows
    marked in ``skip`` (events the operator rejects) are never late and move no max."""
    counted = t if skip is None else np.where(skip, NO_TIME, t)
    before, running = max_before(code, counted, prior)
    late = (before != NO_TIME) & (t < before - lateness)
    if skip is not None:
        late &= ~skip
    after = prior.copy()
    if len(code):
        last = np.flatnonzero(np.r_[code[1:] != code[:-1], True])
        after[code[last]] = np.maximum(prior[code[last]], running[last])
    return LateSplit(before, late, after)


def arrival_order(code: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """The order of rows by (key code, arrival sequence) that :func:`late_split` takes."""
    return order_by_code(code, seq)


def isos(us: np.ndarray) -> np.ndarray:
    """Microseconds since the epoch as ISO 8601 UTC strings (``...T00:04:10.026326Z``)."""
    return np.datetime_as_string(np.asarray(us, dtype="int64").astype("datetime64[us]"),
                                 unit="us", timezone="UTC")


def late_reasons(t: np.ndarray, before: np.ndarray, lateness: int) -> list[str]:
    """The reason of each late event (event times ``t``, its key's max event time ``before``):
    times in ISO 8601 UTC, the lateness in seconds."""
    if not len(t):
        return []
    text = f"{lateness / 1e6:g}s"
    return [f"event time {ti} is below the key's watermark {wi} (max event time seen {pi} "
            f"minus lateness {text})" for ti, wi, pi in zip(
                isos(t), isos(np.asarray(before, dtype="int64") - lateness), isos(before),
                strict=True)]


@dataclass(frozen=True)
class Marks:
    """Each key's max event time before and after a step, by key code: a code indexes ``keys``
    (distinct and sorted, so codes sort like the keys); ``NO_TIME`` for a key without events."""

    keys: np.ndarray
    before: np.ndarray
    after: np.ndarray

    @classmethod
    def of(cls, keys: np.ndarray, max_t: np.ndarray) -> Marks:
        """The marks of ``keys`` with their max event times (before and after alike)."""
        if keys.dtype.kind in "iu" and not np.any(keys[1:] <= keys[:-1]):
            return cls(keys, max_t, max_t)  # (distinct and sorted already, as a state keeps them)
        code, distinct = pd.factorize(keys, sort=True)
        times = np.full(len(distinct), NO_TIME, dtype="int64")
        times[code] = max_t
        return cls(distinct, times, times)

    def code_of(self, keys: np.ndarray) -> np.ndarray:
        """The code of each of ``keys`` (all of them among :attr:`keys`)."""
        return np.searchsorted(self.keys, keys)

    def watermark(self, lateness: int) -> np.ndarray:
        """Each key's watermark after the step, by code."""
        return self.after - lateness


@dataclass(frozen=True)
class Arrivals:
    """A batch split by lateness (see :func:`split_batch`)."""

    marks: Marks
    late: pd.DataFrame  # late events with a reason, in arrival order
    on_time: pd.DataFrame  # on-time events, by key and arrival
    code: np.ndarray  # the key code of each on-time event


def split_batch(batch: pd.DataFrame, prior: Marks, key: str, lateness: int,
                keep: list[str] | None = None) -> Arrivals:
    """Split ``batch`` into late and on-time events (the on-time ones with those of the columns
    ``keep`` it has, when given); ``prior.after``: each key's max event time before the batch."""
    values = batch[key].to_numpy()
    code, keys = pd.factorize(np.concatenate([prior.keys, values]) if len(prior.keys) else values,
                              sort=True)
    before = np.full(len(keys), NO_TIME, dtype="int64")
    before[code[:len(prior.keys)]] = prior.after
    code = code[len(prior.keys):]
    seq = batch[SEQ].to_numpy(dtype="int64")
    order = arrival_order(code, seq)
    c, t = code[order], batch[TIME].to_numpy(dtype="int64")[order]
    split = late_split(c, t, before, lateness)
    on_time = order[~split.late] if split.late.any() else order
    columns = [n for n in keep if n in batch.columns] if keep is not None else list(batch.columns)
    return Arrivals(Marks(keys, before, split.after),
                    _late(batch, order[split.late], split.before[split.late], lateness),
                    pd.DataFrame({n: take(batch[n], on_time) for n in columns}),
                    c[~split.late])


def _late(batch: pd.DataFrame, rows: np.ndarray, before: np.ndarray, lateness: int
          ) -> pd.DataFrame:
    """The late events ``rows`` of ``batch`` in arrival order, with their reason (``before``:
    each one's max event time before it)."""
    by_arrival = np.argsort(batch[SEQ].to_numpy(dtype="int64")[rows], kind="stable")
    rows, before = rows[by_arrival], before[by_arrival]
    late = rows_at(batch, rows, keep_index=False)
    late[REASON] = late_reasons(late[TIME].to_numpy(dtype="int64"), before, lateness)
    return late


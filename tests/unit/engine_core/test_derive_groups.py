"""Grouping a batch's rows by key for the derived columns' windows (``derive_windows.Groups``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.derive_windows import Groups

VALUES = ["b", "a", None, "b", "c", None, "a", "b"]


@pytest.mark.parametrize("categories", [None, ["c", "b", "a", "z"]], ids=["inferred", "given"])
def test_a_categorical_key_groups_as_its_values_do(categories):
    plain = Groups.of(pd.Series(VALUES, dtype=object))
    coded = Groups.of(pd.Series(pd.Categorical(VALUES, categories=categories)))
    for name in ("order", "group", "rank", "starts"):
        assert np.array_equal(getattr(coded, name), getattr(plain, name))
    assert coded.keys.tolist() == plain.keys.tolist() == ["b", "a", None, "c"]


def test_no_rows_as_with_plain_values():
    coded = Groups.of(pd.Series(pd.Categorical([], categories=["a"])))
    plain = Groups.of(pd.Series([], dtype=object))
    assert coded.keys.tolist() == plain.keys.tolist() == []
    assert coded.starts.tolist() == plain.starts.tolist()

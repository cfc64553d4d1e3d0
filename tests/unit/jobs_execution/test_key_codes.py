"""Integer key codes handed to window and QRE operators: order kept, values restored, opt-out
honoured."""

from __future__ import annotations

import json
from itertools import combinations
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.operator import SEQ, TIME, column_to_arrow
from engine.qre.keyed import QreOperator
from engine.qre.query_spec import QreSpec
from engine.windows import Aggregate, TumblingWindow, WindowSpec
from jobs.execution.key_codes import KeyValues, key_codes
from jobs.execution.keyed_steps import BucketSplit, coded_state
from jobs.execution.step_files import arrow_table, part_path, write_part

keys = st.lists(st.text(alphabet="abcxyz", min_size=1, max_size=3), min_size=1, max_size=30)


@given(keys, keys, st.booleans())
def test_codes_sort_like_the_values_and_map_back(state_keys, event_keys, categorical):
    events = pd.Series(event_keys)
    if categorical:  # as a dictionary-encoded key column reads: its dictionary may hold more
        events = events.astype(pd.CategoricalDtype(sorted({*event_keys, "zz", "0"})[::-1]))
    frames = [pd.DataFrame({"k": state_keys}), pd.DataFrame({"k": events, "x": 1})]
    (state, events), keys = key_codes("k", frames)
    assert keys.decode(state)["k"].tolist() == state_keys
    assert keys.decode(events)["k"].tolist() == event_keys
    schema = pa.schema([("k", pa.string()), ("x", pa.int64())])
    assert arrow_table(events, schema, keys).column("k").to_pylist() == event_keys
    coded = arrow_table(events, schema, keys, dictionary=True).column("k")
    assert pa.types.is_dictionary(coded.type) and coded.to_pylist() == event_keys
    pairs = list(zip([*state_keys, *event_keys], [*state["k"], *events["k"]], strict=True))
    for (a, ca), (b, cb) in combinations(pairs, 2):
        assert (a < b) == (ca < cb) and (a == b) == (ca == cb)


def test_text_kept_as_codes_is_written_as_text_with_its_null_count(tmp_path):
    frame = pd.DataFrame({"k": pd.Categorical(["b", None, "a", "b"], categories=["a", "b", "zz"]),
                          "x": [4, 2, 3, 1]})
    schema = pa.schema([("k", pa.string()), ("x", pa.int64())])
    table = arrow_table(frame, schema, dictionary=True)
    assert pa.types.is_dictionary(table.schema.field("k").type)
    plan = SimpleNamespace(dirs={"output": str(tmp_path)}, buckets=2)
    row = write_part(part_path(plan, 0, "output", range(1)), 0, "output", table, range(1))
    back = pq.read_table(row["path"])
    assert back.schema == schema  # the text reads back as text, not as a dictionary
    assert back.column("k").to_pylist() == ["b", None, "a", "b"]
    stats = json.loads(row["stats"])
    assert stats["nullCount"] == {"k": 1, "x": 0}
    assert (stats["minValues"], stats["maxValues"]) == ({"x": 1}, {"x": 4})


def _spec(*aggregates: Aggregate) -> WindowSpec:
    columns = {c for a in aggregates for c in (a.column, a.by) if c}
    return WindowSpec(key="k", size_us=10_000_000, lateness_us=0, aggregates=aggregates,
                      value_types={c: "string" if c == "k" else "int" for c in columns},
                      key_type="string")


def test_window_output_is_the_same_with_codes_as_with_values():
    rng = np.random.default_rng(3)
    names = np.array(["delta", "alpha", "charlie", "bravo"], dtype=object)
    n = 400
    frame = pd.DataFrame({"k": names[rng.integers(0, 4, n)], "v": rng.integers(0, 50, n),
                          TIME: np.sort(rng.integers(0, 60_000_000, n)), SEQ: np.arange(n)})
    op = TumblingWindow(_spec(Aggregate("n", "count", None), Aggregate("top", "max", "v")))
    assert op.codes_keys
    plain = _outputs(op, frame)
    (coded,), keys = key_codes("k", [frame])
    out = keys.decode(_outputs(op, coded))
    assert len(plain) > 8
    pd.testing.assert_frame_equal(out, plain, check_dtype=False)


def _outputs(op: TumblingWindow, events: pd.DataFrame) -> pd.DataFrame:
    """Every row ``op`` emits over ``events`` in two batches and the flush, in order."""
    state, frames = op.init(), []
    for batch in (events.iloc[:200], events.iloc[200:]):
        result = op.step(state, batch)
        state = result.state
        frames.append(result.output)
    frames.append(op.finish(state))
    return pd.concat(frames, ignore_index=True)


def test_an_aggregate_over_the_key_keeps_the_values():
    op = TumblingWindow(_spec(Aggregate("top", "argmax", "k", by="v")))
    assert not op.codes_keys


@pytest.mark.parametrize("output", ["every", "changes", "final"])
def test_qre_output_is_the_same_with_codes_as_with_values(output):
    text = "iter(eps(0), atom(v > 2, v) | atom(v <= 2, 0), +)"
    op = QreOperator(QreSpec(key="k", key_type="string", lateness_us=10, text=text,
                             output=output, timestamp_columns=(), fields=("v",)))
    assert op.codes_keys
    rng = np.random.default_rng(5)
    names = np.array(["delta", "alpha", "charlie", "bravo"], dtype=object)
    n = 400
    values = rng.integers(0, 6, n).astype(object)
    values[rng.integers(0, n, 10)] = None  # rejected: the query reads v
    frame = pd.DataFrame({"k": names[rng.integers(0, 4, n)], "v": values,
                          TIME: np.arange(n) * 3 - rng.integers(0, 40, n), SEQ: np.arange(n)})
    plain = _qre_steps(op, frame, None)
    (coded,), keys = key_codes("k", [frame])
    with_codes = _qre_steps(op, coded, keys)
    assert len(plain["output"]) >= 4 and len(plain["late"]) and len(plain["rejected"])
    for kind, expected in plain.items():
        pd.testing.assert_frame_equal(with_codes[kind], expected, check_dtype=False, obj=kind)


def _qre_steps(op: QreOperator, events: pd.DataFrame, keys: KeyValues | None
               ) -> dict[str, pd.DataFrame]:
    """Everything ``op`` returns over ``events`` in two batches and the flush (keys decoded)."""
    state, found = op.init(), {"output": [], "late": [], "rejected": [], "state": []}
    decode = keys.decode if keys else (lambda frame: frame)
    for batch in (events.iloc[:200], events.iloc[200:]):
        result = op.step(state, batch)
        state = result.state
        for kind in ("output", "late", "rejected", "state"):
            found[kind].append(decode(getattr(result, kind)))
    found["output"].append(decode(op.finish(state)))
    return {kind: pd.concat(frames, ignore_index=True) for kind, frames in found.items()}


def test_a_qre_query_reading_the_key_keeps_the_values():
    op = QreOperator(QreSpec(key="k", key_type="string", lateness_us=0, text="atom(k == 'a', 1)",
                             output="every", timestamp_columns=(), fields=("k",)))
    assert not op.codes_keys


@given(keys, keys)
def test_a_shared_split_codes_a_state_as_key_codes_codes_it_with_the_events(state_keys,
                                                                              event_keys):
    """A shared job codes a stream's events once (``split_bucket``) and each member's state
    against them; a state key the events lack recodes the events: the codes are those
    ``key_codes`` gives the state and the events together."""
    events = pd.DataFrame({"k": event_keys, "x": 1})
    (coded,), values = key_codes("k", [events])
    split = BucketSplit([coded], [events.iloc[:0]], values)
    state, (batch,), keys = coded_state(pd.DataFrame({"k": state_keys}), split)
    (state_alone, batch_alone), keys_alone = key_codes(
        "k", [pd.DataFrame({"k": state_keys}), events])
    assert state["k"].tolist() == state_alone["k"].tolist()
    assert batch["k"].tolist() == batch_alone["k"].tolist()
    assert keys.values.tolist() == keys_alone.values.tolist()


@given(st.lists(st.one_of(st.none(), st.sampled_from(["b", "a", "zz"])), max_size=20))
def test_a_categorical_column_converts_to_the_values_of_the_plain_one(values):
    plain = pd.Series(values, dtype=object)
    categorical = plain.astype(pd.CategoricalDtype(["zz", "b", "a", "unused"]))
    assert column_to_arrow(categorical, pa.string()).equals(
        column_to_arrow(plain, pa.string()))

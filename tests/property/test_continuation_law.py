"""The continuation law on pure operators: continuing a run commit by commit (kept batches, state
before the flush, provisional flush rows replaced) equals one run over the whole input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.batch_plans import row_cuts
from engine.operator import SEQ, TIME
from engine.qre.keyed import QreOperator
from engine.qre.query_spec import QreSpec
from jobs.runs.run_segments import kept_batches

QUERY = "iter(eps(0), atom(v > 50, 1) | atom(v <= 50, 0), +)"


def operator(output: str) -> QreOperator:
    return QreOperator(QreSpec(key="k", key_type="string", lateness_us=3000, text=QUERY,
                               output=output, timestamp_columns=(), fields=("k", "v")))


class Run:
    """A run kept as the runner keeps it: per batch its output rows and the state after it, and
    the provisional flush rows."""

    def __init__(self, op: QreOperator):
        self.op, self.cuts = op, [0]
        self.outputs: list[pd.DataFrame] = []
        self.states: list[pd.DataFrame] = []
        self.flush = pd.DataFrame()

    def extend(self, events: pd.DataFrame, rows: int) -> None:
        """Continue to ``events`` (the whole input now) with the plan ``rows:<rows>``."""
        cuts = row_cuts(rows, len(events))
        keep = kept_batches(self.cuts, cuts) if self.outputs or self.cuts != [0] else 0
        del self.outputs[keep:], self.states[keep:]  # the rewind
        state = self.states[-1] if self.states else self.op.init()
        for b in range(keep, len(cuts) - 1):
            result = self.op.step(state, events.iloc[cuts[b]:cuts[b + 1]])
            state = result.state
            self.outputs.append(result.output.assign(batch=b))
            self.states.append(state)
        self.cuts = cuts
        self.flush = self.op.finish(state).assign(batch=len(cuts) - 1)

    def table(self) -> list[tuple]:
        frames = [f for f in [*self.outputs, self.flush] if not f.empty]
        if not frames:
            return []
        out = pd.concat(frames, ignore_index=True).astype(object)
        return sorted(map(tuple, out.where(out.notna(), None).to_numpy().tolist()), key=repr)


@st.composite
def recordings(draw):
    n = draw(st.integers(0, 60))
    keys = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    base = np.cumsum(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)) or [0])[:n]
    jitter = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    events = pd.DataFrame({
        "k": pd.Series(keys, dtype=object),
        TIME: (np.asarray(base, dtype="int64") - np.asarray(jitter, dtype="int64")) * 1000,
        SEQ: np.arange(n, dtype="int64"),
        "v": pd.Series(draw(st.lists(st.one_of(st.none(), st.integers(0, 100)), min_size=n,
                                     max_size=n)), dtype=object),
    })
    commits = sorted(draw(st.lists(st.integers(0, n), min_size=1, max_size=5)))
    return events, [*commits, n]


@pytest.mark.parametrize("output", ["every", "changes", "final"])
@settings(max_examples=12, deadline=None, derandomize=True)
@given(recording=recordings(), rows=st.integers(1, 9))
def test_continuing_commit_by_commit_equals_one_run(output, recording, rows):
    events, commits = recording
    continued = Run(operator(output))
    for end in commits:
        continued.extend(events.iloc[:end], rows)
    fresh = Run(operator(output))
    fresh.extend(events, rows)
    assert continued.table() == fresh.table()
    op = operator(output)
    assert (op.state_codec.digest(continued.states[-1] if continued.states else op.init())
            == op.state_codec.digest(fresh.states[-1] if fresh.states else op.init()))


@pytest.mark.parametrize(("old", "new", "kept"), [
    ([0, 10, 20, 25], [0, 10, 20, 30, 31], 2),  # rows:10, the partial last batch is redone
    ([0, 10, 20], [0, 10, 20, 30], 2),  # the old last batch was full: every batch kept
    ([0, 4, 9], [0, 4, 9, 15], 2),  # commit plan: every old batch kept
    ([0, 0], [0, 5], 0),  # empty run
])
def test_kept_batches(old, new, kept):
    assert kept_batches(old, new) == kept

"""Session windows by hand-checked examples."""

from __future__ import annotations

import pandas as pd

from engine.operator import SEQ, TIME, run_batches
from engine.windows import Aggregate, SessionWindow, WindowSpec

AGGS = (Aggregate("n", "count", None), Aggregate("s", "sum", "v"))


def spec(gap: int, lateness: int = 0) -> WindowSpec:
    return WindowSpec(key="k", gap_us=gap, lateness_us=lateness, aggregates=AGGS,
                      value_types={"v": "int"}, key_type="string", kind="session")


def frame(times: list[int], values: list[int], first_seq: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"k": ["a"] * len(times), TIME: times,
                         SEQ: range(first_seq, first_seq + len(times)), "v": values})


def rows(out: pd.DataFrame) -> list[tuple]:
    return [tuple(r) for r in out[["window_start", "window_end", "n", "s"]].values.tolist()]


def test_sessions_are_runs_of_events_less_than_the_gap_apart():
    # gap 5: 0 and 3 together; 9 - 3 = 6 starts a new one; 14 - 9 = 5 too (not less than 5)
    out, _, _, _ = run_batches(SessionWindow(spec(5, lateness=100)),
                               [frame([0, 3, 9, 14], [1, 2, 3, 4])])
    assert rows(out) == [(0, 8, 2, 3), (9, 14, 1, 3), (14, 19, 1, 4)]


def test_an_event_within_the_lateness_bridges_two_sessions():
    op = SessionWindow(spec(5, lateness=100))
    first = op.step(op.init(), frame([0, 8], [1, 2]))
    second = op.step(first.state, frame([4], [4], first_seq=2))  # 4 - 0 < 5 and 8 - 4 < 5
    assert first.output.empty and second.output.empty
    assert rows(op.finish(second.state)) == [(0, 13, 3, 7)]


def test_a_session_is_emitted_once_the_watermark_reaches_its_last_event_plus_the_gap():
    op = SessionWindow(spec(5))
    first = op.step(op.init(), frame([0, 4], [1, 2]))
    assert first.output.empty  # [0, 9) is open at watermark 4
    second = op.step(first.state, frame([9], [3], first_seq=2))
    assert rows(second.output) == [(0, 9, 2, 3)]

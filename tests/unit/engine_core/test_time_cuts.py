"""Time batch plans: where the cuts fall, read from the input files with pyarrow (a replay in
the command's own process has no Spark session)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.batch_plans import InputFile, parse_plan
from jobs.execution.arrival import resolve_cuts

SECOND = 1_000_000


def _files(tmp_path, times: list[int | None], sizes: list[int]) -> list[InputFile]:
    """``times`` (µs since the epoch, None: no time) written as files of ``sizes`` rows."""
    files, offset = [], 0
    for i, size in enumerate(sizes):
        part = times[offset:offset + size]
        path = tmp_path / f"part-{i}.parquet"
        pq.write_table(pa.table({"ts": pa.array(part, pa.timestamp("us", "UTC"))}), path)
        files.append(InputFile(str(path), i, size, offset))
        offset += size
    return files


def _expected(times: list[int | None], interval: int) -> list[int]:
    """Cuts by definition: before each interval boundary after the earliest event, the first
    arrival of an event at or after that boundary (so cuts never decrease)."""
    known = [(t, s) for s, t in enumerate(times) if t is not None]
    if not known:
        return [0, len(times)]
    first = min(t for t, _ in known)
    start = first - first % interval
    last = max(t for t, _ in known)
    cuts = [min((s for t, s in known if t >= start + k * interval), default=len(times))
            for k in range(1, (last - start) // interval + 1)]
    return [0, *cuts, len(times)]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.one_of(st.none(), st.integers(-400, 400)), min_size=1, max_size=60),
       st.integers(1, 4), st.sampled_from([1, 7, 60]), st.data())
def test_time_cuts_fall_where_event_time_first_reaches_each_interval(tmp_path_factory, seconds,
                                                                     files, interval, data):
    times = [None if s is None else s * SECOND + 123 for s in seconds]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(times)), max_size=files - 1)))
    sizes = [b - a for a, b in zip([0, *cuts], [*cuts, len(times)], strict=True)]
    input_files = _files(tmp_path_factory.mktemp("time"), times, sizes)
    got = resolve_cuts(parse_plan(f"time:{interval}s"), input_files, "ts")
    assert got == _expected(times, interval * SECOND)
    assert got == sorted(got)


def test_an_input_without_event_times_is_one_batch(tmp_path):
    files = _files(tmp_path, [None, None, None], [3])
    assert resolve_cuts(parse_plan("time:1s"), files, "ts") == [0, 3]


def test_cuts_of_an_hour_plan_fall_on_the_hour(tmp_path):
    hour = 3600 * SECOND
    times = [int(t) for t in np.array([0.2, 0.9, 1.1, 0.5, 2.0, 3.7]) * hour]
    # arrivals 0..5: the hour [1h, 2h) is first reached by event 2, [2h, 3h) by event 4
    assert resolve_cuts(parse_plan("time:1h"), _files(tmp_path, times, [6]), "ts") \
        == [0, 2, 4, 5, 6]

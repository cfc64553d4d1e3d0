"""Where a replay's batch groups run: the estimate's laws, forcing, and what run.json records."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.catalog import parse_query, parse_recording
from jobs.runs import engine_choice
from jobs.runs.engine_choice import (
    EngineChoice,
    Estimate,
    choose,
    engines_summary,
    note_engine,
)
from jobs.runs.run_context import RunContext
from jobs.runs.run_info import ReplayError, RunInfo
from jobs.runtime.lazy_session import LazySpark
from jobs.settings import Settings


def estimate(events: int, parallel: int = 2, spark_up: bool = False, jobs: int = 1) -> Estimate:
    return Estimate(events=events, work_us=0.3 * events, jobs=jobs, parallel=parallel,
                    spark_up=spark_up)


def test_a_small_run_stays_in_the_driver_and_a_large_one_on_many_cores_goes_to_spark():
    assert choose("auto", "direct", estimate(1_000)).engine == "driver"
    assert choose("auto", "direct", estimate(100_000_000, parallel=32)).engine == "spark"


@given(events=st.integers(0, 10**9), parallel=st.integers(1, 512), jobs=st.integers(1, 1000))
def test_spark_up_and_more_cores_never_turn_a_spark_choice_into_the_driver(events, parallel,
                                                                          jobs):
    cold = choose("auto", "direct", estimate(events, parallel, False, jobs)).engine
    warm = choose("auto", "direct", estimate(events, parallel, True, jobs)).engine
    wider = choose("auto", "direct", estimate(events, parallel * 2, False, jobs)).engine
    if cold == "spark":
        assert warm == wider == "spark"


@given(events=st.integers(0, 10**9), spark_up=st.booleans())
def test_a_forced_engine_is_taken_whatever_the_estimate(events, spark_up):
    for engine in ("spark", "driver"):
        assert choose(engine, "direct", estimate(events, spark_up=spark_up)).engine == engine


def test_the_spark_exchange_runs_on_spark_and_cannot_be_forced_into_the_driver():
    assert choose("auto", "spark", estimate(10)).engine == "spark"
    with pytest.raises(ReplayError, match="spark exchange"):
        choose("driver", "spark", estimate(10))
    with pytest.raises(ReplayError, match="unknown engine 'gpu'"):
        choose("gpu", "direct", estimate(10))


def run_info(engines: list[dict] | None = None) -> RunInfo:
    return RunInfo(run_id="r", query="q", fingerprint="f", recording="rec", input_path="p",
                   input_version=0, plan="commit", cuts=[0, 5, 10, 10], files=[], buckets=2,
                   operator="op@1", engines=engines or [])


def test_groups_run_the_same_way_one_after_the_other_make_one_entry():
    info = run_info()
    note_engine(info, [0], EngineChoice("driver", "estimate"))
    note_engine(info, [1], EngineChoice("driver", "estimate"))
    assert engines_summary(info) == "driver"
    note_engine(info, [2, 3], EngineChoice("spark", "forced"))
    assert info.engines == [{"batches": [0, 1], "engine": "driver", "reason": "estimate"},
                            {"batches": [2, 3], "engine": "spark", "reason": "forced"}]
    assert engines_summary(info) == "driver 0-1, spark 2-3"


def test_batches_run_again_belong_to_the_group_that_reran_them():
    info = run_info()
    note_engine(info, [0, 1, 2], EngineChoice("driver", "estimate"))
    note_engine(info, [2, 3], EngineChoice("driver", "estimate"))  # a continuation reruns 2
    assert info.engines == [{"batches": [0, 3], "engine": "driver", "reason": "estimate"}]
    note_engine(info, [3, 4], EngineChoice("spark", "forced"))
    assert engines_summary(info) == "driver 0-2, spark 3-4"
    note_engine(info, [0, 1], EngineChoice("spark", "forced"))  # a run redone from its start
    assert info.engines == [{"batches": [0, 1], "engine": "spark", "reason": "forced"}]


def test_a_live_session_turns_an_unsure_estimate_into_spark():
    """An estimate Spark wins only once it is up: the driver runs the group while Spark starts
    (a hand-over); with the session up, Spark runs it."""
    middle = estimate(10_000_000, parallel=16, jobs=4)
    cold = choose("auto", "direct", middle)
    assert (cold.engine, cold.start_spark) == ("driver", True)
    assert choose("auto", "direct", estimate(10_000_000, 16, True, 4)).engine == "spark"


def test_on_two_cores_the_driver_runs_any_size_and_spark_is_not_started():
    """Measured on 2 cores, Spark's tasks cost more than the driver's work whatever the size:
    no hand-over, not even with a session up."""
    for events in (1_000, 1_000_000, 10_000_000, 10**9):
        for up in (False, True):
            choice = choose("auto", "direct", estimate(events, 2, up, jobs=50))
            assert (choice.engine, choice.start_spark) == ("driver", False)


def test_a_single_group_is_not_handed_over():
    """With one group left there is nothing to hand over: Spark if it ends sooner with its
    start, else the driver, Spark not started."""
    for events in (1_000, 20_000_000, 10**9):
        choice = choose("auto", "direct", estimate(events, parallel=2, jobs=1))
        assert not choice.start_spark
        assert choice.engine == ("spark" if estimate(events, 2, False, 1).spark_s()
                                 < estimate(events, 2, False, 1).driver_s() else "driver")


@given(events=st.integers(0, 10**9), parallel=st.integers(1, 512), jobs=st.integers(1, 1000),
       at=st.integers(0, 50), first=st.integers(0, 100))
def test_a_forced_hand_over_runs_the_groups_before_its_batch_in_the_driver(events, parallel,
                                                                         jobs, at, first):
    choice = choose("auto", "direct", estimate(events, parallel, False, jobs), at, first)
    assert (choice.engine, choice.start_spark) == (
        ("driver", True) if first < at else ("spark", False))
    for forced in ("spark", "driver"):  # an engine forced by the user wins
        assert choose(forced, "direct", estimate(events), at, first).engine == forced


def window_context() -> RunContext:
    recording = parse_recording({"name": "ev", "key": "k", "time": "ts",
                                 "columns": {"k": "string", "ts": "timestamp", "v": "int"}})
    query = parse_query({"name": "w", "kind": "window", "input": "ev",
                         "query": {"window": {"type": "tumbling", "size": "5s"},
                                   "aggregates": {"n": "count()"}}},
                        {"ev": recording}, "w.yaml")
    return RunContext.of(query, {"ev": recording})


@pytest.mark.parametrize(("master", "buckets", "tasks"), [
    ("local[2]", 32, 2), ("local[8]", 32, 8), ("local[8]", 4, 4), ("local[1]", 32, 2),
    ("spark://nowhere:7077", 32, 32)])
def test_spark_s_work_is_spread_over_the_tasks_a_job_runs_not_over_the_buckets(master, buckets,
                                                                               tasks):
    """A Spark job runs one task per core, each stepping a range of the run's buckets (a local
    master has at least 2): 32 buckets on 2 cores are 2 tasks at once, not 32. The session is
    not started to know it (a cluster's cores are known once it has started: its run's buckets
    stand for them)."""
    spark = LazySpark(Settings(spark_master=master))
    info = replace(run_info(), buckets=buckets, cuts=[0, 10_000_000, 20_000_000, 20_000_000])
    got = engine_choice.estimate(info, window_context(), 0, 5, spark)
    assert (got.parallel, got.spark_up, got.events) == (tasks, False, 20_000_000)
    assert not spark.started

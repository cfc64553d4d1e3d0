"""The estimated work of a shared job's members (``jobs.shared.shared_work``, from each family's
``step_work``), which balances the parts:
a pane group's events are counted once, a select weighs the rows it keeps, a window the windows
it emits (never more than its events)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from engine.predicate import TRUE, parse_predicate
from engine.registry import family_of
from engine.sharing import AggregateView, SharingView, Statistics, WindowView, plan_queries
from engine.sharing.cost import (
    DERIVED_US,
    MEMBER_US,
    PANE_EVENT_US,
    PANES_US,
    windows_emitted,
)
from jobs.shared.shared_work import work_of

MINUTE = 60_000_000
COLUMNS = {"k": "string", "x": "double", "ts": "timestamp"}


@pytest.fixture(scope="module")
def stats() -> Statistics:
    rng = np.random.default_rng(3)
    n = 5000
    sample = pd.DataFrame({"k": rng.integers(0, 100, n).astype(str), "x": rng.uniform(0, 100, n),
                           "ts": rng.integers(0, 600 * MINUTE, n)})
    return Statistics(rows=1_000_000, sample=sample)


def window(name: str, where: str | None = None, size: int = 1) -> SharingView:
    return SharingView(name, frozenset({"k", "x", "ts"}),
                       TRUE if where is None else parse_predicate(where, COLUMNS),
                       WindowView("time", size * MINUTE, MINUTE, time="ts"), key="k",
                       aggregates=(AggregateView("n", "count", None),))


def select(name: str, where: str) -> SharingView:
    return SharingView(name, frozenset({"k", "x"}), parse_predicate(where, COLUMNS))


def member(name: str, share: object | None = None, derive: object | None = None
           ) -> SimpleNamespace:
    return SimpleNamespace(name=name, share=share, derive=derive, computes=derive is not None)


def test_a_pane_groups_events_are_counted_once(stats):
    plan = plan_queries([window("a"), window("b", size=5)], stats)
    work = work_of(plan, dict.fromkeys(["a", "b"], family_of("window")))
    panes = object()
    together = work([member("a", panes), member("b", panes)])
    apart = work([member("a")]) + work([member("b")])
    assert together == pytest.approx(apart - PANES_US - stats.rows * PANE_EVENT_US)


def test_a_select_weighs_the_rows_it_keeps(stats):
    plan = plan_queries([select("wide", "x < 90"), select("narrow", "x < 1")], stats)
    work = work_of(plan, dict.fromkeys(["wide", "narrow"], family_of("select")))
    assert work([member("narrow")]) < MEMBER_US * 1.1 < work([member("wide")])


def test_a_sparse_window_emits_no_more_windows_than_its_events(stats):
    sparse = window("sparse", "x < 0.5")
    rows = stats.selectivity(sparse.where) * stats.rows
    every_window = stats.key_count("k") * stats.span("ts") / MINUTE
    assert rows < every_window
    assert windows_emitted(sparse, rows, stats) == rows
    assert windows_emitted(window("dense"), stats.rows, stats) == pytest.approx(every_window)


def test_a_clusters_derived_columns_are_counted_once_per_unit(stats):
    plan = plan_queries([window("a"), window("b", size=5)], stats)
    work = work_of(plan, dict.fromkeys(["a", "b"], family_of("window")))
    derive = SimpleNamespace(computed=2)
    plain = work([member("a")]) + work([member("b")])
    assert work([member("a", derive=derive)]) == pytest.approx(
        work([member("a")]) + 2 * stats.rows * DERIVED_US)
    assert work([member("a", derive=derive), member("b", derive=derive)]) == pytest.approx(
        plain + 2 * stats.rows * DERIVED_US)

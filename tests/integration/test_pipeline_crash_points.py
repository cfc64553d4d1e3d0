"""Pipeline replays interrupted at any storage commit: for random recordings, batch plans,
chains of two or three stages and crash points (the k-th table commit of the chain's replay,
counting every commit of every stage, the crash before or after that commit lands), a replay
of the last stage by a new process (a fresh ``Replay`` and storage object) resumes every
stage's run to the uninterrupted result (tables, arrival numbers and manifests), and each
resumed run validates against its own reference and the composed reference over the
recording. The stages' ``where:`` conditions (:mod:`predicates`) and lateness are drawn too
(the test writes the chain's catalog). The crash is simulated in-process
(:class:`SimulatedCrash`): the warehouse is left as a kill at that commit boundary leaves it
(``test_pipeline_continue_crash.py`` kills real processes at a few points)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from helpers import events_table, small_catalog, write_commits
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from predicates import conditions
from test_pipeline_continue_crash import chain_runs
from test_pipeline_fusion import input_rows, manifest_rows, table_rows

from engine.catalog import load_catalog
from jobs.runs.replay import Replay
from jobs.runs.validate import validate_run
from jobs.storage import open_storage
from jobs.storage.base import DeltaStorage
from jobs.warehouse import Warehouse

#: Stage -> its chain: window -> QRE, window -> window, window -> QRE -> select.
STAGES = ("ev_w_alert", "ev_w_max", "ev_w_alerts")
#: ``where:`` over the recording's ``v`` (0..99), over ``ev_w``'s rows (5 s windows of it) and
#: over the QRE's running count.
ON_EVENTS = conditions({"v": "int"}, {"v": [0, 50, 99]}, leaves=3)
ON_WINDOWS = conditions({"n": "int", "hi": "int", "mean": "double"},
                        {"n": [1, 7], "hi": [0, 99], "mean": [50.0]}, leaves=3)
ON_ALERTS = conditions({"value": "int"}, {"value": [0, 2]}, leaves=2)


def where(condition: str | None) -> str:
    return "" if condition is None else f"where: {json.dumps(condition)}\n"


@st.composite
def stage_catalogs(draw: st.DrawFn) -> dict[str, str]:
    """The chain's queries (file name -> text): ``ev_w`` over the recording, ``ev_w_max`` (a
    window) and ``ev_w_alert`` (a QRE) over it, ``ev_w_alerts`` (a select) over the QRE, each
    with a drawn ``where:`` (or none) and lateness (ms; on, next to, or off the 5 s window)."""
    def lateness() -> str:
        ms = draw(st.one_of(st.sampled_from([0, 4999, 5000, 5001]), st.integers(0, 20_000)))
        return f"lateness: {ms}ms\n"

    def condition(strategy: st.SearchStrategy[str]) -> str:
        return where(draw(st.none() | strategy))

    return {
        "ev_w": ("name: ev_w\nkind: window\ninput: ev\n" + lateness() + condition(ON_EVENTS)
                 + "query:\n  window: {type: tumbling, size: 5s}\n  aggregates: {n: count(), "
                 "n_v: count(v), s: sum(v), lo: min(v), hi: max(v), mean: avg(v)}\n"),
        "ev_w_max": ("name: ev_w_max\nkind: window\ninput: {query: ev_w}\n" + lateness()
                     + condition(ON_WINDOWS) + "query:\n  window: {type: tumbling, size: 20s}"
                     "\n  aggregates: {windows: count(), top: max(hi), total: sum(s)}\n"),
        "ev_w_alert": ("name: ev_w_alert\nkind: qre\ninput: {query: ev_w}\noutput: every\n"
                       + lateness() + condition(ON_WINDOWS)
                       + 'query: "iter(eps(0), atom(n > 5, 1) | atom(n <= 5, 0), +)"\n'),
        "ev_w_alerts": ("name: ev_w_alerts\nkind: select\ninput: {query: ev_w_alert}\n"
                        + condition(ON_ALERTS) + "query: {columns: [k, event_time, value]}\n"),
    }


def chain_catalog(queries: dict[str, str]) -> tuple[Path, object]:
    """A new directory with a warehouse and the catalog of ``small_catalog`` with ``queries``
    (name -> text) written over it; the directory and the catalog."""
    root = Path(tempfile.mkdtemp(prefix="reprise-pipeline-crash-"))
    small_catalog(root / "schemas")
    for name, text in queries.items():
        (root / "schemas" / "queries" / f"{name}.yaml").write_text(text)
    return root, load_catalog(root / "schemas")


class SimulatedCrash(Exception):
    """The replay's process dies at a storage commit (raised by :func:`crash_at`)."""


@dataclass
class Commits:
    """The table commits a storage object made (see :func:`crash_at`)."""

    count: int = 0
    #: Nesting of the commit methods (a write that commits through ``commit_files``).
    depth: int = 0
    #: The table the crash interrupted (``<run>/<table>``), once it came.
    crashed: str = ""


def crash_at(storage: DeltaStorage, k: int, after: bool) -> Commits:
    """Count this storage object's table commits (``write`` and ``commit_files``; a write
    that commits through ``commit_files`` counts once) and raise :class:`SimulatedCrash` at
    the ``k``-th (1-based; 0: never), before it lands or, with ``after``, once it has landed.
    Returns the counter, filled as commits go."""
    seen = Commits()

    def counted(method: Callable, where: int) -> Callable:
        def commit(*args, **kwargs):
            outermost = seen.depth == 0
            if outermost and seen.count + 1 == k:
                seen.crashed = "/".join(Path(kwargs.get("path", args[where])).parts[-2:])
                if not after:
                    raise SimulatedCrash(f"before commit {k} ({seen.crashed})")
            seen.depth += 1
            try:
                result = method(*args, **kwargs)
            finally:
                seen.depth -= 1
            if outermost:
                seen.count += 1
                if after and seen.count == k:
                    raise SimulatedCrash(f"after commit {k} ({seen.crashed})")
            return result
        return commit

    # (the table's path: ``write(data, path, ...)``, ``commit_files(path, ...)``)
    for name, where in (("write", 1), ("commit_files", 0)):
        setattr(storage, name, counted(getattr(storage, name), where))
    return seen


def replayed(spark, queries: dict[str, str], seed: int, events: int, stage: str, plan: str,
             per_job: int, k: int = 0, after: bool = False) -> tuple[Replay, Commits]:
    """A new warehouse with the chain's recording (``seed``, ``events``) and catalog
    (``queries``: :func:`stage_catalogs`), replayed up to ``stage`` under ``plan`` in jobs of
    ``per_job`` batches by a storage object crashing at commit ``k`` (0: never); returns the
    replay and the commit counter."""
    root, catalog = chain_catalog(queries)
    storage = open_storage(spark, "delta-rs")
    warehouse = Warehouse(root / "warehouse")
    write_commits(storage, warehouse.recording("ev"),
                  events_table(np.random.default_rng(seed), events), 3)
    replay = Replay(spark, storage, warehouse, catalog, engine="driver",
                    batches_per_job=per_job)
    seen = crash_at(replay.storage, k, after)
    try:
        replay.run(replay.prepare(stage, plan=plan))
    except SimulatedCrash:
        assert k, "a crash with no crash point"
    return replay, seen


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**16), events=st.integers(60, 300), rows=st.integers(10, 120),
       per_job=st.integers(1, 4), stage=st.sampled_from(STAGES), after=st.booleans(),
       queries=stage_catalogs(), data=st.data())
def test_a_chain_crashed_at_any_commit_resumes_to_the_uninterrupted_result(
        spark, seed, events, rows, per_job, stage, after, queries, data):
    plan = f"rows:{rows}"
    whole, counted = replayed(spark, queries, seed, events, stage, plan, per_job)
    k = data.draw(st.integers(1, counted.count), label="crash at commit")
    dying, seen = replayed(spark, queries, seed, events, stage, plan, per_job, k, after)
    assert seen.count == k - (not after) and seen.crashed  # it came where it was drawn
    run, table = seen.crashed.split("/")
    event(f"crash {'after' if after else 'before'} a commit of {run.split('-v')[0]}/{table}")
    # a new process: a fresh storage object and replay over the crashed warehouse
    resumed = Replay(spark, open_storage(spark, "delta-rs"), dying.warehouse, dying.catalog,
                     engine="driver", batches_per_job=per_job)  # (the same settings)
    info = resumed.prepare(stage, plan=plan)
    resumed.run(info)
    runs = chain_runs(resumed, info)
    assert len(runs) == (3 if stage == "ev_w_alerts" else 2)
    assert runs == chain_runs(whole, whole.prepare(stage, plan=plan))  # (pinned ids: equal)
    for run_id in runs:
        for table in ("output", "late", "quarantine"):
            assert table_rows(resumed, run_id, table) == table_rows(whole, run_id, table), \
                (run_id, table, k, after)
        assert manifest_rows(resumed, run_id) == manifest_rows(whole, run_id), (run_id, k)
        if run_id != runs[0]:  # a stage's input table, in arrival order
            assert input_rows(resumed, run_id) == input_rows(whole, run_id), (run_id, k)
        report = validate_run(resumed, resumed.catalog, run_id)
        assert report.ok, (run_id, report.diff, report.late_mismatch, report.chain)

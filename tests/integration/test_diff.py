"""``reprise diff``: two runs compared row by row, checked against an independent pandas
computation from the two runs' tables, on random query pairs and random small recordings."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from helpers import events_table, write_commits
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from engine.catalog import load_catalog
from jobs.cli.app import app
from jobs.diff import buckets
from jobs.diff.run_diff import diff_sides
from jobs.diff.sides import resolve_sides
from jobs.runs.replay import Replay
from jobs.runtime.lazy_session import LazySpark
from jobs.settings import Settings
from jobs.storage.delta_rs import DeltaRsStorage
from jobs.warehouse import Warehouse

RECORDING = """\
name: ev
key: k
time: ts
columns: {k: string, ts: timestamp, v: int, big: int, d: double, e: double}
"""
OTHER_RECORDING = RECORDING.replace("name: ev", "name: ev2")
BIG = 2**53


def window_query(name: str, size: int = 5, lateness: int = 3, threshold: int | None = None,
                 total: str = "d", top: str = "max") -> str:
    where = f"where: v > {threshold}\n" if threshold is not None else ""
    return (f"name: {name}\nkind: window\ninput: ev\nlateness: {lateness}s\n{where}query:\n"
            f"  window: {{type: tumbling, size: {size}s}}\n"
            f"  aggregates: {{n: count(), s: sum({total}), top: {top}(big), lo: min(v)}}\n")


def qre_query(name: str, threshold: int = 50, lateness: int = 3, combine: str = "+") -> str:
    return (f"name: {name}\nkind: qre\ninput: ev\nlateness: {lateness}s\noutput: every\n"
            f'query: "iter(eps(0), atom(v > {threshold}, 1) | atom(v <= {threshold}, 0), '
            f'{combine})"\n')


def select_query(name: str, columns: tuple[str, ...] = ("k", "v"), threshold: int | None = None,
                 input_: str = "ev") -> str:
    where = f"where: v > {threshold}\n" if threshold is not None else ""
    return (f"name: {name}\nkind: select\ninput: {input_}\n{where}"
            f"query:\n  columns: [{', '.join(columns)}]\n")


def recording(seed: int, n: int) -> pa.Table:
    """Events over 4 keys with null keys, times and values, ints above 2^53 and two double
    columns ``d`` and ``e`` equal within the tolerance on some rows and beyond it on others."""
    rng = np.random.default_rng(seed)
    base = events_table(rng, n)
    big = (BIG + rng.integers(0, 1000, n)).astype(object)
    d = rng.normal(0, 100, n)
    e = d * np.where(rng.random(n) < 0.7, 1 + 1e-13, 1 + 1e-6)
    if n:
        big[rng.random(n) < 0.1] = None
    null_d = rng.random(n) < 0.1
    return base.append_column("big", pa.array(big, pa.int64())).append_column(
        "d", pa.array(np.where(null_d, np.nan, d), pa.float64(), mask=null_d)).append_column(
        "e", pa.array(np.where(null_d, np.nan, e), pa.float64(), mask=null_d))


def project(root: Path, queries: dict[str, str], storage, table: pa.Table, commits: int
            ) -> Replay:
    """A catalog of ``queries`` over recording ``ev`` holding ``table``; a runner that replays
    small runs in this process."""
    (root / "schemas" / "recordings").mkdir(parents=True)
    (root / "schemas" / "queries").mkdir(parents=True)
    (root / "schemas" / "recordings" / "ev.yaml").write_text(RECORDING)
    (root / "schemas" / "recordings" / "ev2.yaml").write_text(OTHER_RECORDING)
    for name, text in queries.items():
        (root / "schemas" / "queries" / f"{name}.yaml").write_text(text)
    warehouse = Warehouse(root / "warehouse")
    write_commits(storage, warehouse.recording("ev"), table, commits)
    lazy = LazySpark(Settings(spark_master="local[2]"))
    return Replay(lazy, DeltaRsStorage(lazy), warehouse, load_catalog(root / "schemas"),
                  settings=Settings(engine="driver"))


# -- the independent computation ----------------------------------------------------------------

def exact(table: pa.Table) -> pd.DataFrame:
    return table.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype(),
                                         pa.bool_(): pd.BooleanDtype()}.get)


def null(v) -> bool:
    return v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and math.isnan(v))


def same(x, y) -> bool:
    if null(x) or null(y):
        return null(x) and null(y)
    if isinstance(x, float) or isinstance(y, float):
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9)
    return x == y


def expected_counts(a: pd.DataFrame, b: pd.DataFrame, identity: list[str]) -> dict:
    """only_a, only_b, changed of two tables joined on ``identity``: the other shared columns
    (``batch`` aside) compared value by value; changed rows per column; the columns only one
    side has."""
    shared = [c for c in a.columns if c in b.columns and c not in identity and c != "batch"]
    joined = a[identity + shared].merge(b[identity + shared], on=identity, how="outer",
                                        suffixes=("_a", "_b"), indicator=True)
    both = joined[joined["_merge"] == "both"].astype(object)
    differs = {c: [not same(x, y) for x, y in zip(both[f"{c}_a"], both[f"{c}_b"], strict=True)]
               for c in shared}
    changed = sum(any(flags) for flags in zip(*differs.values(), strict=True)) if shared else 0
    return {"only_a": int((joined["_merge"] == "left_only").sum()),
            "only_b": int((joined["_merge"] == "right_only").sum()), "changed": changed,
            "changed_columns": {c: sum(f) for c, f in differs.items() if any(f)},
            "columns_only_in_a": [c for c in a.columns if c not in b.columns and c != "place"],
            "columns_only_in_b": [c for c in b.columns if c not in a.columns and c != "place"]}


def with_position(frame: pd.DataFrame) -> pd.DataFrame:
    """QRE rows with their place among their key's rows, by event time then arrival."""
    frame = frame.sort_values(["event_time", "arrival_seq"])
    return frame.assign(place=frame.groupby("k", dropna=False).cumcount())


IDENTITY = {"window": ["k", "window_start", "window_end"], "qre": ["k", "place"],
            "select": ["arrival_seq"]}


def independent(runner: Replay, run_a: str, run_b: str, kind: str) -> dict[str, dict]:
    counts = {}
    for table in ("output", "late", "quarantine"):
        a, b = (exact(runner.storage.read_arrow(runner.warehouse.run_table(r, table)))
                for r in (run_a, run_b))
        identity = IDENTITY[kind] if table == "output" else ["arrival_seq"]
        if table == "output" and kind == "qre":
            a, b = with_position(a), with_position(b)
        counts[table] = expected_counts(a, b, identity)
    return counts


# -- the property -----------------------------------------------------------------------------

PAIRS = {
    "window": st.sampled_from([
        ({}, {}), ({"threshold": 30}, {"threshold": 60}), ({"size": 5}, {"size": 6}),
        ({"lateness": 3}, {"lateness": 1}), ({"total": "d"}, {"total": "e"}),
        ({"top": "max"}, {"top": "min"})]),
    "qre": st.sampled_from([({}, {}), ({"threshold": 50}, {"threshold": 40}),
                            ({"lateness": 3}, {"lateness": 1}),
                            ({"combine": "+"}, {"combine": "max"})]),
    "select": st.sampled_from([({}, {}), ({"columns": ("k", "v")}, {"columns": ("k", "d")}),
                               ({"threshold": 20}, {"threshold": 70}),
                               ({"columns": ("k", "d")}, {"columns": ("k", "e")})]),
}
MAKERS = {"window": window_query, "qre": qre_query, "select": select_query}


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(kind=st.sampled_from(sorted(PAIRS)), data=st.data(), seed=st.integers(0, 10_000),
       n=st.integers(0, 90), commits=st.integers(1, 3),
       rows_per_bucket=st.sampled_from([7, 50, buckets.ROWS_PER_BUCKET]))
def test_diff_counts_equal_an_independent_join_of_the_two_runs(storage, kind, data, seed, n,
                                                               commits, rows_per_bucket):
    """Also with buckets of a few rows (the comparison spilled to files, bucket by bucket)."""
    first, second = data.draw(PAIRS[kind], label="query pair")
    make = MAKERS[kind]
    root = Path(tempfile.mkdtemp(prefix="reprise-diff-"))
    runner = project(root, {"qa": make("qa", **first), "qb": make("qb", **second)}, storage,
                     recording(seed, n), commits)
    a, b = resolve_sides(runner, "qa", "qb", lambda line: None)
    with mock.patch.object(buckets, "ROWS_PER_BUCKET", rows_per_bucket):
        report = diff_sides(runner, a, b, limit=5).to_json()
    expected = independent(runner, a.info.run_id, b.info.run_id, kind)
    for table in ("output", "late", "quarantine"):
        got = {k: report[table][k] for k in expected[table]}
        assert got == expected[table], (table, first, second)
        shown = sum(expected[table][k] for k in ("only_a", "only_b", "changed"))
        assert len(report[table]["differences"]) == min(5, shown)
    assert report["equal"] == (not any(c[k] for c in expected.values()
                                       for k in ("only_a", "only_b", "changed")))
    assert (report["first_diverging_batch"] is None) == (report["equal"]
                                                         and not report["output"]["moved"])
    if first == second:
        assert report["equal"]


# -- constructed cases --------------------------------------------------------------------------

def marked(n: int, at: list[int]) -> pa.Table:
    """``n`` events in arrival order one second apart, ``v`` 999 at the arrivals ``at``."""
    table = recording(1, n)
    v = np.arange(n) % 90
    v[at] = 999
    ts = pa.array(1_700_000_000_000_000 + np.arange(n) * 1_000_000, pa.int64()).cast(
        pa.timestamp("us", tz="UTC"))
    return table.set_column(table.schema.get_field_index("v"), "v", pa.array(v, pa.int64())
                            ).set_column(table.schema.get_field_index("ts"), "ts", ts)


@pytest.mark.parametrize(("plan", "at", "first"), [
    ("rows:10", [25, 47], 2), ("cuts:5,30,31", [30], 2), ("rows:10", [], None),
    ("rows:7", [0], 0)])
def test_the_first_diverging_batch_is_the_first_whose_rows_differ(storage, tmp_path, plan, at,
                                                                   first):
    """Select everything, or everything but v = 999: the first batch that differs is the
    batch of the first marked event's arrival."""
    runner = project(tmp_path, {"all": select_query("all", ("k", "v")),
                                "some": select_query("some", ("k", "v"), threshold=-1)
                                .replace("v > -1", "v != 999")}, storage, marked(60, at), 2)
    info = runner.prepare("all", plan=plan)
    runner.run(info)
    a, b = resolve_sides(runner, info.run_id, "some", lambda line: None)
    report = diff_sides(runner, a, b).to_json()
    assert b.info.cuts == a.info.cuts
    assert report["first_diverging_batch"] == first
    assert report["output"]["only_a"] == len(at) and report["equal"] == (not at)
    assert [row["arrival_seq"] for row in report["output"]["differences"]] == sorted(at)


def test_a_spark_run_and_a_driver_run_of_one_query_are_equal(spark, storage, tmp_path):
    """The same definition run by Spark jobs and in the driver: no difference."""
    runner = project(tmp_path, {"qa": qre_query("qa"), "qb": qre_query("qb")}, storage,
                     recording(5, 80), 2)
    on_spark = dataclasses.replace(runner, spark=spark, storage=storage,
                                   settings=Settings(engine="spark"))
    info = on_spark.prepare("qa", plan="rows:20")
    on_spark.run(info)
    a, b = resolve_sides(runner, info.run_id, "qb", lambda line: None)
    report = diff_sides(runner, a, b).to_json()
    assert report["equal"] and report["output"]["equal"] > 0


# -- the command line ----------------------------------------------------------------------------

def reprise(runner: Replay, *args: str):
    result = CliRunner().invoke(app, ["diff", *args, "--warehouse", str(runner.warehouse.root),
                                      "--catalog", str(runner.catalog.root)])
    return result


def error_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    return lines[0]


def test_exit_codes_json_and_differences_written_as_delta_tables(storage, tmp_path):
    runner = project(tmp_path, {"qa": window_query("qa"), "qb": window_query("qb", size=6),
                                "qc": window_query("qc")}, storage, recording(3, 80), 2)
    same = reprise(runner, "qa", "qc", "--json")
    assert same.exit_code == 0, same.output
    assert json.loads(same.stdout)["equal"] is True
    out = tmp_path / "differences"
    changed = reprise(runner, "qa", "qb", "--json", "--output", str(out))
    assert changed.exit_code == 1, changed.output
    doc = json.loads(changed.stdout)
    assert set(doc) >= {"equal", "output", "late", "quarantine", "first_diverging_batch"}
    assert isinstance(doc["first_diverging_batch"], int)
    written = exact(runner.storage.read_arrow(str(out / "output")))
    assert written["difference"].value_counts().to_dict() == {
        k: doc["output"][k] for k in ("only_a", "only_b", "changed") if doc["output"][k]}
    text = reprise(runner, "qa", "qb", "--limit", "3")
    assert text.exit_code == 1 and "first diverging batch" in text.stdout


def test_bad_inputs_exit_2_with_one_line_and_write_nothing(storage, tmp_path):
    runner = project(tmp_path, {"qa": window_query("qa"), "qq": qre_query("qq"),
                                "other": select_query("other", input_="ev2")}, storage,
                     recording(4, 60), 3)
    old = runner.prepare("qa", version=1)
    runner.run(old)
    new = runner.prepare("qa")
    runner.run(new)
    runs = sorted(runner.warehouse.runs())
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "file").write_text("x")
    fresh = tmp_path / "fresh"
    for args, named in [(("qa", "nope"), "'nope'"), (("no-run", "qa"), "'no-run'"),
                        (("qa", "other", "--output", str(fresh)), "ev2"),
                        (("qq", "qq", "--output", str(taken)), "--output"),
                        ((old.run_id, new.run_id), "ev@1"), (("qa", "other"), "ev2"),
                        (("qa", "qq"), "qq"), (("qa",), "--base"),
                        (("qa", "--base", "HEAD"), "git")]:
        result = reprise(runner, *args)
        assert result.exit_code == 2, (args, result.output)
        assert named in error_line(result), args
    assert sorted(runner.warehouse.runs()) == runs and not fresh.exists()


def git(directory: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(directory), *args], check=True, capture_output=True)


def test_base_compares_the_definition_at_a_git_revision_with_the_current_one(storage, tmp_path):
    runner = project(tmp_path, {}, storage, recording(6, 80), 2)
    queries = tmp_path / "schemas" / "queries"
    git(tmp_path, "init", "-q")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
        "--allow-empty", "-m", "empty")
    (queries / "qa.yaml").write_text(window_query("qa"))
    git(tmp_path, "add", "schemas")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "qa")
    (queries / "qa.yaml").write_text(window_query("qa", size=6))
    (queries / "qb.yaml").write_text(window_query("qb"))
    (queries / "qc.yaml").write_text(window_query("qc", size=6))

    result = reprise(runner, "qa", "--base", "HEAD", "--json")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["a"]["run_id"] != doc["b"]["run_id"] and "-base-" in doc["a"]["run_id"]
    assert doc["a"]["plan"] == doc["b"]["plan"] and doc["a"]["reads"] == doc["b"]["reads"]
    expected = independent(runner, doc["a"]["run_id"], doc["b"]["run_id"], "window")
    plain = json.loads(reprise(runner, "qb", "qc", "--json").stdout)  # the same two definitions
    for table in ("output", "late", "quarantine"):
        counts = {k: expected[table][k] for k in ("only_a", "only_b", "changed")}
        assert {k: doc[table][k] for k in counts} == counts
        assert {k: plain[table][k] for k in counts} == counts

    runs = sorted(runner.warehouse.runs())
    for revision, named in (("no-such-rev", "no-such-rev"), ("HEAD~1", "does not exist")):
        bad = reprise(runner, "qa", "--base", revision)
        assert bad.exit_code == 2 and named in error_line(bad)
    assert sorted(runner.warehouse.runs()) == runs


def test_spj_outputs_compare_as_multisets_of_rows(spark, storage):
    """Two spj queries (one changed range): only-in-A and only-in-B rows are the multiset
    differences of the two output tables' rows; nothing is 'changed'."""
    from collections import Counter

    from test_spj_replay import make_replay as spj_replay

    replay = spj_replay(spark, storage, n=80, seed=4)
    queries = replay.catalog.root / "queries"
    text = (queries / "ev_distinct.yaml").read_text()
    (queries / "ev_shifted.yaml").write_text(text.replace("ev_distinct", "ev_shifted").replace(
        "e.v >= 10 AND e.v < 20", "e.v >= 14 AND e.v < 30"))
    replay = dataclasses.replace(replay, catalog=load_catalog(replay.catalog.root))
    a, b = resolve_sides(replay, "ev_distinct", "ev_shifted", lambda line: None)
    report = diff_sides(replay, a, b).to_json()
    rows = [Counter(tuple(r.values()) for r in replay.storage.read_arrow(
        replay.warehouse.run_table(s.info.run_id, "output")).drop(["batch"]).to_pylist())
        for s in (a, b)]
    assert report["output"]["only_a"] == sum((rows[0] - rows[1]).values())
    assert report["output"]["only_b"] == sum((rows[1] - rows[0]).values())
    columns = replay.storage.schema(replay.warehouse.run_table(a.info.run_id, "output")).names
    assert report["output"]["changed"] == 0
    assert report["output"]["identity"] == [c for c in columns if c != "batch"] + ["emission"]
    assert not report["equal"]

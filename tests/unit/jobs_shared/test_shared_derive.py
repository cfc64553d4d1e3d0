"""Derived columns in the shared scan, without Spark: a definition is its parsed expression and
type (spacing, keyword case, intermediate names do not matter; another literal does); a
cluster computes each definition once and its values equal what each query's own workers
compute (lag, running aggregates, CASE, NULLs, events before the range); predicates keep
their meaning over stream names."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.operator import SEQ, exact_pandas
from engine.predicate import parse_predicate
from engine.sharing import SharingView
from engine.sharing.derived import (
    SharedColumn,
    definitions,
    renamed,
    shared_columns,
    with_derived,
)
from jobs.execution.derived_columns import worker_derive
from jobs.shared.shared_derive import cluster_derive

COLUMNS = {"k": "string", "v": "int"}
#: Definitions (name, sql, type): two of ``dv``; a column read by another.
POOL = [
    ("dv", "v - lag(v) over (partition by k order by __seq)", "int"),
    ("dv", "coalesce(v, 0) * 2", "int"),
    ("run", "sum(v) over (partition by k order by __seq)", "int"),
    ("band", "case when v is null then -1 when v < 50 then 0 else 1 end", "int"),
    ("half", "v / 2", "double"),
    ("big", "v > 50", "bool"),
]


def spelled(sql: str, upper: bool, spaces: int) -> str:
    """``sql`` with its keywords in another case and its operators spaced otherwise."""
    out = sql
    if upper:
        for word in ("lag", "over", "partition by", "order by", "sum", "case when", "then",
                     "else", "end", "is null", "coalesce"):
            out = out.replace(word, word.upper())
    return out.replace(" - ", " " * spaces + "-" + " " * spaces)


@given(st.sampled_from(POOL), st.booleans(), st.integers(1, 3))
def test_a_definition_is_its_parsed_expression_and_type(item, upper, spaces):
    name, sql, typ = item
    a = definitions({name: (sql, typ)})[name]
    b = definitions({name: (spelled(sql, upper, spaces), typ)})[name]
    assert (a.stream, a.digest) == (b.stream, b.digest)
    other = definitions({name: (f"({sql}) + 1", typ)})[name]
    assert other.stream != a.stream and other.stream.startswith(f"{name}@")
    if typ == "int":
        assert definitions({name: (sql, "double")})[name].digest != a.digest


def test_intermediate_names_do_not_matter_but_their_definitions_do():
    one = definitions({"a": ("v + 1", "int"), "b": ("a * 2", "int")})["b"]
    two = definitions({"x": ("v + 1", "int"), "b": ("x * 2", "int")})["b"]
    three = definitions({"x": ("v + 2", "int"), "b": ("x * 2", "int")})["b"]
    assert one.stream == two.stream != three.stream


def test_different_definitions_of_one_name_are_different_columns_of_the_cluster():
    views = [with_derived(SharingView(q, frozenset({"v"})), {"dv": (sql, "int")})
             for q, sql in (("p", POOL[0][1]), ("q", POOL[0][1]), ("r", POOL[1][1]))]
    columns = shared_columns(views)
    assert sorted(c.queries for c in columns) == [("p", "q"), ("r",)]
    assert len({c.streams for c in columns}) == 2


@settings(deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(st.none(), st.integers(0, 99)), min_size=0, max_size=40),
       st.data())
def test_renamed_predicates_keep_their_meaning(values, data):
    frame = pd.DataFrame({"v": pd.array(values, dtype="Int64")})
    text = data.draw(st.sampled_from(["v < 30", "v IS NULL OR v > 60", "v BETWEEN 10 AND 50",
                                      "NOT v IN (1, 2, 3) AND v < 90"]))
    pred = parse_predicate(text, {"v": "int"})
    moved = renamed(pred, {"v": "v@1234"})
    assert moved.columns == {"v@1234"}
    assert (moved.evaluate(frame.rename(columns={"v": "v@1234"})) == pred.evaluate(frame)).all()


def write_files(tmp_path, table: pa.Table, pieces: int) -> list[dict]:
    files, bounds = [], np.linspace(0, table.num_rows, pieces + 1).astype(int)
    for i, (a, b) in enumerate(itertools.pairwise(bounds)):
        path = tmp_path / f"part-{i}.parquet"
        pq.write_table(table.slice(a, b - a), path)
        files.append({"uri": str(path), "offset": int(a)})
    return files


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]),
                          st.one_of(st.none(), st.integers(0, 99))), min_size=1, max_size=40),
       st.lists(st.sets(st.integers(0, len(POOL) - 1), min_size=1, max_size=3), min_size=1,
                max_size=4),
       st.integers(0, 40), st.integers(1, 3))
def test_a_cluster_computes_each_definition_once_as_each_query_alone(
        tmp_path_factory, events, queries, lo, pieces):
    tmp_path = tmp_path_factory.mktemp("derive")
    table = pa.table({"k": pa.array([k for k, _ in events], pa.string()),
                      "v": pa.array([v for _, v in events], pa.int64())})
    files = write_files(tmp_path, table, pieces)
    lo = min(lo, len(events) - 1)
    frame = exact_pandas(table.slice(lo))
    frame[SEQ] = np.arange(lo, len(events), dtype="int64")
    derived = [{POOL[i][0]: POOL[i][1:] for i in sorted(q)} for q in queries]
    views = [with_derived(SharingView(f"q{i}", frozenset({"v"})), d)
             for i, d in enumerate(derived)]
    columns = shared_columns(views)
    derive = cluster_derive(columns, COLUMNS, files)
    assert derive is not None
    assert derive.computed == len({c.digest for c in columns})  # each definition once
    shared = derive.add_to(frame.copy(), lo)
    for d, view in zip(derived, views, strict=True):
        alone = worker_derive(d, COLUMNS, "k", files)
        assert not isinstance(alone, str), alone
        mine = alone.add_to(frame.copy(), lo, lambda t: np.ones(t.num_rows, bool))
        for c in view.derived:
            pd.testing.assert_series_equal(shared[c.stream].reset_index(drop=True),
                                           mine[c.name].reset_index(drop=True),
                                           check_names=False)


def test_constant_columns_are_added_to_the_events_as_read_text_dictionary_encoded():
    derive = cluster_derive([
        SharedColumn("'all'", "string", None, "d1", ("__global",), ("g",)),
        SharedColumn("7", "int", None, "d2", ("seven@d2",), ("s",))], COLUMNS, [])
    assert derive is not None and derive.computed == 0
    table = pa.table({"k": pa.array(["a", None, "b"]), "v": pa.array([1, 2, 3])})
    added = derive.add_constants(table)
    assert pa.types.is_dictionary(added.column("__global").type)
    events = exact_pandas(added)
    assert isinstance(events["__global"].dtype, pd.CategoricalDtype)
    assert events["__global"].tolist() == ["all"] * 3
    assert events["seven@d2"].tolist() == [7] * 3
    assert not events["__global"].isna().any()
    assert derive.add_constants(added).column_names == added.column_names  # (added once)

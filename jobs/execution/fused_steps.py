"""The worker side of a fused pipeline stage: an upstream query and the stage reading its output,
stepped in one task through one group of batches (the exchange law: no intermediate table, no
second shuffle).

Each task of the upstream (a range of buckets, :func:`upstream_part`) steps its keys as a run
of its own does and writes its files; besides their descriptions it returns each batch's output
rows as they were written (Arrow IPC). Those rows become the stage's events of the same batch, in
emission order (:func:`stream_rows`), numbered from the stage's cut point of
the group's first batch: exactly the stream its separate run would read back from its input
table. The stage's operator then steps those batches (after the upstream's end-of-input flush,
which is a batch of the stage, comes the stage's own flush) over every key at once
(:func:`stage_part`), and writes its files: a stage's arrival sequence numbers the rows of one
batch over all keys (by key, then the upstream's order), so no bucket could number its rows
alone. The stage's input is the upstream's output (aggregates, alerts, a selection), which
the driver steps where the upstream's tasks hand it over.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import pyarrow as pa

from engine.operator import SEQ, TIME, exact_pandas
from engine.specs import QuerySpec
from jobs.execution.bucketing import key_buckets
from jobs.execution.direct_exchange import step_group
from jobs.execution.keyed_steps import batch_buckets, run_bucket
from jobs.execution.step_files import count_row
from jobs.execution.step_plan import StepPlan

#: The kind of an upstream task's row holding a batch's output rows for the stage, and the
#: column holding them (Arrow IPC).
EMITTED, IPC = "emitted", "ipc"


def plain(table: pa.Table) -> pa.Table:
    """``table`` with its dictionary-encoded columns decoded (an output file's text columns),
    so that they sort by value."""
    columns = [c.combine_chunks().dictionary_decode() if pa.types.is_dictionary(c.type) else c
               for c in table.columns]
    return pa.Table.from_arrays(columns, names=table.column_names)


def stream_rows(query: QuerySpec, output: pa.Table) -> pa.Table:
    """The rows of an upstream's output (``batch`` column included) as the stage ``query``
    reads them: the stream's columns, in emission order (batch, then the upstream family's
    order)."""
    assert query.upstream is not None
    order = [("batch", "ascending"), *((c, "ascending") for c in query.upstream.order)]
    rows = output.sort_by(order) if output.num_rows else output
    columns = list(query.upstream.stream.columns)
    return rows.select(columns).cast(pa.schema([output.schema.field(c) for c in columns]))


@dataclass(frozen=True)
class StageInput:
    """A fused stage's input of one group: the upstream's output rows of the group as the
    stage reads them (:func:`stream_rows`: emission order) and how many rows each upstream
    batch of the group emitted; the rows the stage's input table gets, and its events."""

    rows: pa.Table
    counts: dict[int, int]

    @classmethod
    def of(cls, query: QuerySpec, emitted: pa.Table) -> StageInput:
        """The stage ``query``'s input from its upstream's ``emitted`` rows of the group (any
        order, ``batch`` column included)."""
        ids, counts = np.unique(emitted.column("batch").to_numpy(), return_counts=True)
        return cls(stream_rows(query, emitted), dict(zip(ids.tolist(), counts.tolist(),
                                                         strict=True)))

    def after(self, batch: int | None) -> pa.Table:
        """The rows of the upstream batches after ``batch`` (all of them: None); the rows are
        in batch order, so these are the last ones."""
        skipped = sum(n for b, n in self.counts.items() if batch is not None and b <= batch)
        return self.rows.slice(skipped)


def stage_events(feed: tuple[int, ...], flush: int | None, stage: StepPlan,
                 given: StageInput, first_seq: int
                 ) -> tuple[StepPlan, pd.DataFrame, np.ndarray]:
    """The stage's plan for the group (a batch per upstream batch ``feed`` of the group, with
    its arrival range; then its own end-of-input flush ``flush``, if the group has it), its
    events (the group's input ``given``, numbered from ``first_seq``, as the direct exchange
    hands a run its input's events) and their key buckets."""
    batches, seq = [], first_seq
    for batch in feed:
        batches.append((batch, seq, seq + given.counts.get(batch, 0)))
        seq += given.counts.get(batch, 0)
    if flush is not None:  # the stage's own flush after the upstream's
        batches.append((flush, seq, seq))
    plan = replace(stage, batches=tuple(batches), finish=flush is not None)
    rows = given.rows
    times = rows.column(stage.time_column).cast(pa.timestamp("us")).cast(pa.int64())
    numbers = pa.array(np.arange(first_seq, first_seq + rows.num_rows, dtype="int64"))
    events = exact_pandas(rows.append_column(SEQ, numbers).append_column(TIME, times),
                          coerce_temporal_nanoseconds=True)
    key = stage.op.key
    of = key_buckets(rows.column(key), stage.buckets, stage.modulo_buckets)
    if stage.op.codes_keys or stage.op.categorical_keys:  # as the direct exchange hands them
        events[key] = events[key].astype("category")
    return plan, events, of


def upstream_part(upstream: StepPlan, files: list[dict], buckets: int, group: range,
                  sink: list[pa.Table] | None = None) -> pd.DataFrame:
    """The upstream's task of the buckets ``group`` over the group's input ``files``, as a run
    of its own steps it (:func:`step_group`): its file rows and input bytes read, and an
    :data:`EMITTED` row per batch with output, holding those rows (Arrow IPC) for the stage;
    ``sink``: in the driver, the output tables go there instead (not serialized)."""
    emitted: dict[int, pa.Table | None] = {}
    rows = step_group(upstream, files, buckets, group, emitted=emitted.__setitem__)
    tables = [t for t in emitted.values() if t is not None]
    if sink is not None:
        sink += tables
    sent = [] if sink is not None else [
        {**count_row(int(t.column("batch")[0].as_py()), EMITTED, group[0], t.num_rows),
         IPC: ipc_bytes(t)} for t in tables]
    return pd.concat([rows, pd.DataFrame(sent)], ignore_index=True) if sent else rows


def ipc_bytes(table: pa.Table) -> bytes:
    """``table`` as an Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def emitted_tables(rows: list[dict]) -> list[pa.Table]:
    """The output tables the :data:`EMITTED` rows of the upstream's tasks hold."""
    return [pa.ipc.open_stream(r[IPC]).read_all() for r in rows if r["kind"] == EMITTED]


def group_output(plan: StepPlan, tables: list[pa.Table]) -> pa.Table:
    """The upstream's output rows of the group from its batches' and buckets' ``tables`` (in
    no particular order: :func:`stage_events` puts them in emission order); text columns
    decoded."""
    found = [plain(t) for t in tables]
    return pa.concat_tables(found) if found else plain(plan.schemas["output"].empty_table())


def stage_part(feed: tuple[int, ...], flush: int | None, stage: StepPlan, given: StageInput,
               first_seq: int, sink: list[pa.Table] | None = None) -> pd.DataFrame:
    """Step the stage over its input of the group (``given``: the upstream's output rows of
    the group; ``feed``, ``flush``: as :func:`stage_events`), every key at once; its file
    rows. ``first_seq``: the stage's cut point of the group's first batch; ``sink``: the
    stage's own output tables go there (a stage fused after it reads them)."""
    plan, events, keys = stage_events(feed, flush, stage, given, first_seq)

    def hand_on(_: int, table: pa.Table | None) -> None:
        if sink is not None and table is not None:
            sink.append(table)

    return run_bucket(plan, range(stage.buckets), events, by_bucket=batch_buckets(
        plan, keys, events[SEQ].to_numpy(dtype="int64"), stage.buckets), emitted=hand_on)

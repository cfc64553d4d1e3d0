"""Pipelines in process: the stream a stage reads from its upstream's output, a chain of stages
run batch by batch, and the chain's reference (the composition of the stages' references).

The stream of a stage is its upstream's output rows in emission order: batch by batch, within a
batch sorted by the upstream family's emission order (:class:`engine.family.OutputStream`),
numbered ``__seq`` from 0 in that order; ``__t`` is the stage's ``time:`` column in
microseconds. Stage batch ``b`` consumes upstream batch ``b``'s output, the upstream's
end-of-input rows included (they are the stage's last batch before its own end of input), so a
chain is cut by its first stage's batch plan. Rows without key or event time are not placeable:
the runner quarantines them before the operator, and so does :func:`run_chain`.

The reference of a chain runs each stage's reference over the previous one's reference output,
ordered by the emission order alone (without batches): the rows of a key come in the same order
either way, and a stage over a stateful upstream keeps the upstream's key, so the chain's rows
equal the run's except for the arrival numbers a stage emits (``arrival_seq``), which number the
rows of the stream it reads and so depend on how the keys of one batch interleave.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .operator import SEQ, TIME, KeyedOperator
from .registry import operator_for, reference_for
from .specs import QuerySpec, RecordingSpec


def stream_batch(rows: pd.DataFrame, query: QuerySpec, first_seq: int) -> pd.DataFrame:
    """One upstream batch's output ``rows`` as events of the stage ``query`` (which reads that
    upstream): in emission order, ``__seq`` from ``first_seq``, ``__t`` from its time column,
    timestamp columns as UTC timestamps (as a run reads them back from the output table)."""
    upstream = query.upstream
    if upstream is None:
        raise ValueError(f"query {query.name!r} reads a recording, not a query")
    frame = rows.sort_values(list(upstream.order), kind="stable") if len(rows) else rows
    frame = frame.reset_index(drop=True).copy()
    for column, typ in upstream.stream.columns.items():
        if typ == "timestamp" and column in frame:
            frame[column] = _timestamps(frame[column])
    frame[SEQ] = np.arange(first_seq, first_seq + len(frame), dtype="int64")
    times = frame[query.time]
    micros = times.dt.tz_localize(None).to_numpy(dtype="datetime64[us]").astype("int64")
    frame[TIME] = pd.array(micros, dtype="Int64", copy=False)
    frame.loc[times.isna().to_numpy(), TIME] = pd.NA
    return frame


def _timestamps(values: pd.Series) -> pd.Series:
    """``values`` (timestamps, or int64 microseconds as operators emit them) as UTC
    timestamps in microseconds."""
    if isinstance(values.dtype, pd.DatetimeTZDtype):  # (as to_datetime(utc=True), faster)
        return values.dt.tz_convert("UTC").dt.as_unit("us")
    if pd.api.types.is_datetime64_any_dtype(values):
        return values.dt.tz_localize("UTC").dt.as_unit("us")
    return pd.to_datetime(pd.array(values, dtype="Int64"), unit="us", utc=True).as_unit("us")


def placeable(events: pd.DataFrame, key: str) -> tuple[pd.DataFrame, list[int]]:
    """``events`` without the rows lacking key or event time (event time as int64), and the
    arrival numbers of those rows (the runner quarantines them before the operator)."""
    missing = events[key].isna() | events[TIME].isna()
    kept = events[~missing].copy()
    kept[TIME] = kept[TIME].astype("int64")
    return kept, [int(s) for s in events.loc[missing, SEQ]]


@dataclass
class StageRun:
    """One stage of :func:`run_chain`: the events each batch read (as a run's manifest counts
    them), its output per batch (the end-of-input flush last), its late events and the events
    it could not place."""

    rows_in: list[int] = field(default_factory=list)
    outputs: list[pd.DataFrame] = field(default_factory=list)
    late: list[int] = field(default_factory=list)
    unplaceable: list[int] = field(default_factory=list)

    @property
    def output(self) -> pd.DataFrame:
        """Every output row, in emission order."""
        frames = [o for o in self.outputs if len(o)]
        return pd.concat(frames, ignore_index=True) if frames else self.outputs[-1]


def run_chain(chain: list[QuerySpec], recordings: dict[str, RecordingSpec],
              batches: list[pd.DataFrame]) -> list[StageRun]:
    """Run each query of ``chain`` (each reads the previous one's output) over ``batches`` of
    the first one's input events, batch by batch: stage ``i`` batch ``b`` is stage ``i - 1``
    batch ``b``'s output."""
    runs: list[StageRun] = []
    inputs = batches
    for position, query in enumerate(chain):
        if position:
            inputs, seq = [], 0
            for rows in runs[-1].outputs:
                inputs.append(stream_batch(rows, query, seq))
                seq += len(rows)
        op = operator_for(query, recordings)
        runs.append(_run_stage(op, inputs))
    return runs


def _run_stage(op: KeyedOperator, batches: list[pd.DataFrame]) -> StageRun:
    run, state = StageRun(), op.init()
    for batch in batches:
        run.rows_in.append(len(batch))
        kept, unplaceable = placeable(batch, op.key)
        result = op.step(state, kept)
        state = result.state
        run.outputs.append(result.output)
        run.unplaceable += unplaceable
        if len(result.late):
            run.late += [int(s) for s in result.late[SEQ]]
    run.outputs.append(op.finish(state))
    return run


def chain_reference(chain: list[QuerySpec], recordings: dict[str, RecordingSpec],
                    events: pd.DataFrame) -> list[pd.DataFrame]:
    """Each stage's reference output, the first over ``events`` (its input in arrival order),
    each next one over the previous one's (see the module docstring)."""
    outputs: list[pd.DataFrame] = []
    for position, query in enumerate(chain):
        if position:
            events = stream_batch(outputs[-1], query, 0)
        op = operator_for(query, recordings)
        kept, _ = placeable(events, op.key)
        output, _, _ = reference_for(query, recordings, op)(kept)
        outputs.append(output)
    return outputs

"""The worker side of a run: a bucket of keys, or a range of buckets as one, stepped through a
group of batches.

Keys are hashed into a fixed number of buckets (:mod:`jobs.execution.bucketing`). The events of a
group of consecutive batches reach their bucket either by Spark's shuffle
(:mod:`jobs.execution.spark_exchange`, a task per bucket) or by each task reading the input files
itself for a range of buckets (:mod:`jobs.execution.direct_exchange`), and each task runs in a
Python worker that reads its buckets' current state (their rows of the state files that hold
them: see :func:`run_bucket`), steps the engine through the group's batches in order, and writes
each batch's output and new state rows, and the job's late and quarantined events, as Parquet
files straight into the run's tables (:mod:`jobs.execution.step_files`). Workers return only
file descriptions: the driver never collects rows; it commits the listed files to Delta, batch
by batch. Buckets without events in a batch keep their state file. One Spark job per group of
batches (so its fixed cost is shared), one set of commits per batch. Operators that use key
values only to group and order rows (window operators) get integer codes that sort like the
values; the worker writes the values back."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from engine.operator import REASON, SEQ, TIME
from engine.ordering import in_order
from jobs.execution.bucketing import in_group, key_buckets
from jobs.execution.key_codes import KeyValues, factorized, key_codes
from jobs.execution.step_files import (
    _COLUMNS,
    PartWriter,
    arrow_table,
    buckets_of_file,
    count_row,
    event_table,
    output_table,
)
from jobs.execution.step_plan import StepPlan


def _quarantine(events: pd.DataFrame, plan: StepPlan) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split off events the operator cannot place: no key or no event time."""
    key = plan.op.key
    no_key = events[key].isna().to_numpy()
    no_time = events[TIME].isna().to_numpy()
    missing = no_key | no_time
    bad = events[missing].copy()
    bad[REASON] = [f"missing key column {key!r}" if k else
                   f"missing time column {plan.time_column!r}" for k in no_key[missing]]
    good = events[~missing] if missing.any() else events
    if good[TIME].dtype != np.int64:  # a column that held nulls is nullable Int64
        good = good.assign(**{TIME: good[TIME].astype("int64")})
    return good, bad


def _per_batch(events: pd.DataFrame, ends: np.ndarray) -> list[pd.DataFrame]:
    """``events`` cut into the plan's batches (``ends``: each batch's end of arrival range)."""
    seq = events[SEQ].to_numpy(dtype="int64")
    if not in_order([seq]):  # the Spark exchange delivers rows in any order
        order = np.argsort(seq, kind="stable")
        events, seq = events.iloc[order], seq[order]
    bounds = np.searchsorted(seq, ends, side="left")
    return [events.iloc[a:b] for a, b in zip(np.r_[0, bounds][:-1], bounds, strict=True)]


def _load_state(plan: StepPlan, group: range, beyond: bool) -> pd.DataFrame:
    """The state of the buckets ``group`` before the plan's batches (``beyond``: its files
    hold other buckets too, :func:`_beyond`)."""
    codec = plan.op.state_codec
    files = list(dict.fromkeys(f for b in group for f in plan.state_files.get(b, [])))
    if not files:
        return plan.op.init()
    table = pa.concat_tables(pq.read_table(f, schema=codec.schema) for f in files)
    if beyond:  # the group's rows of files holding other buckets too
        of = key_buckets(table.column(plan.op.key), plan.buckets, plan.modulo_buckets)
        table = table.filter(pa.array(in_group(of, group)))
    return codec.decode(table)


def _beyond(plan: StepPlan, group: range) -> bool:
    """Whether a state file of the buckets ``group`` holds buckets outside it too (a file of
    every bucket, or of another grouping of the buckets)."""
    return any(not set(buckets_of_file(f, plan.buckets)) <= set(group)
               for b in group for f in plan.state_files.get(b, []))


@dataclass(frozen=True)
class BucketSplit:
    """A bucket's events as :func:`run_bucket` steps them, per batch of the plan: those the
    operator can place (keys as codes of ``keys`` for an operator that takes codes) and those it
    quarantines. It depends only on the operator's key, time column and ``codes_keys`` and on
    the batches, so operators that agree on those can step one split (a shared job splits each
    stream's events once for all its members)."""

    good_of: list[pd.DataFrame]
    bad_of: list[pd.DataFrame]
    keys: KeyValues | None


def _steps(plan: StepPlan) -> tuple[tuple[int, int, int], ...]:
    """The plan's batches that step events (not the end-of-input flush)."""
    return plan.batches[:-1] if plan.finish else plan.batches


def split_bucket(plan: StepPlan, events: pd.DataFrame) -> BucketSplit:
    """``events`` (one bucket's) split as :func:`run_bucket` steps them."""
    good, bad = _quarantine(events, plan)
    keys = None
    if plan.op.codes_keys:
        (good,), keys = key_codes(plan.op.key, [good])
    ends = np.asarray([hi for _, _, hi in _steps(plan)], dtype="int64")
    return BucketSplit(_per_batch(good, ends), _per_batch(bad, ends), keys)


def batch_buckets(plan: StepPlan, of: np.ndarray, seq: np.ndarray, buckets: int) -> np.ndarray:
    """The events of each batch the plan steps (rows) in each bucket (columns), for
    :func:`run_bucket`'s ``by_bucket``: ``of``: each event's bucket, ``seq``: its arrival
    sequence, ascending (as the input files give it)."""
    cuts = np.searchsorted(seq, [plan.batches[0][1], *(hi for _, _, hi in _steps(plan))])
    return np.array([np.bincount(of[a:b], minlength=buckets) for a, b in pairwise(cuts)],
                    "int64").reshape(-1, buckets)


def coded_state(state: pd.DataFrame, split: BucketSplit
                 ) -> tuple[pd.DataFrame, list[pd.DataFrame], KeyValues]:
    """``state`` with its keys as codes of the split's key values, the split's events and those
    values (the events recoded when the state holds keys they lack): codes that sort like the
    values, as :func:`key_codes` gives ``state`` and the events together."""
    keys, good_of = split.keys, split.good_of
    assert keys is not None
    codes, distinct = factorized(state[keys.key])
    where = keys.index.get_indexer(distinct)
    if (where < 0).any():
        values = keys.index.append(pd.Index(distinct)).unique().sort_values()
        recode = values.get_indexer(keys.index)
        good_of = [f if f.empty else f.assign(**{keys.key: recode.take(
            f[keys.key].to_numpy(dtype="int64"))}) for f in good_of]
        keys = KeyValues(keys.key, values.to_numpy(dtype=object))
        where = keys.index.get_indexer(distinct)
    state = state.copy(deep=False)
    state[keys.key] = where[codes]
    return state, good_of, keys


def run_bucket(plan: StepPlan, bucket: int | range, events: pd.DataFrame | BucketSplit,
               by_bucket: np.ndarray | None = None,
               emitted: Callable[[int, pa.Table | None], None] | None = None) -> pd.DataFrame:
    """The worker side: step one bucket, or a range of consecutive buckets as one, through the
    plan's batches (``events``: theirs, or their :func:`split_bucket`). ``by_bucket`` (with a
    range of buckets): ``by_bucket[i, b]`` events of bucket ``b`` in the plan's ``i``-th batch
    (a column per bucket of the run): the buckets step as one (the operators are key by key),
    and a batch with events of any of them writes one state file of them all (see
    :func:`execute_direct`); in a shared job the counts include the events the cluster's W
    dropped (they count as seen, stepped past like events failing ``where:``). Buckets whose
    state is in a file holding other buckets too write their part of it in every batch,
    events or not, so that each batch's commit covers every bucket of that file and drops it
    (the first commits may be an earlier attempt's, found done). ``emitted`` hears each
    batch's output rows as they are made (a fused pipeline stage reads them:
    :mod:`jobs.execution.fused_steps`)."""
    if "engine.qre" in sys.modules:  # a QRE operator came with the plan: set its kernel cache
        sys.modules["engine.qre"].configure_cache(plan.kernel_dir)
    op = plan.op
    group = bucket if isinstance(bucket, range) else range(bucket, bucket + 1)
    own = _beyond(plan, group)
    state = _load_state(plan, group, own)
    with PartWriter() as files:
        split = events if isinstance(events, BucketSplit) else split_bucket(plan, events)
        good_of, keys = split.good_of, split.keys
        if keys is not None:
            state, good_of, keys = coded_state(state, split)
        schemas = plan.schemas
        pending: dict[str, list[pd.DataFrame]] = {"late": [], "quarantine": []}  # to be written
        steps = _steps(plan)
        for i, (batch, _, _) in enumerate(steps):
            batch_good, batch_bad = good_of[i], split.bad_of[i]
            seen_of = ({group[0]: len(batch_good) + len(batch_bad)} if by_bucket is None else
                       {b: int(by_bucket[i, b]) for b in group})
            if not sum(seen_of.values()):  # no event of these buckets in this batch: same state
                if not own:
                    continue  # (its state file stays)
                for b in group:
                    files.add(count_row(batch, "input", b, 0))
            else:
                result = op.step(state, batch_good)
                state = result.state
                rejected = keys.decode(result.rejected) if keys else result.rejected
                for b, n in seen_of.items():
                    files.add(count_row(batch, "input", b, n))
                output = output_table(result.output, schemas["output"], batch, keys)
                if emitted is not None:
                    emitted(batch, output)
                files.write(plan, batch, "output", output, group)
                for kind, found in (("late", [result.late]), ("quarantine", [batch_bad, rejected])):
                    files.add(count_row(batch, kind, group[0], sum(len(f) for f in found)))
                    if batch > plan.events_done.get(kind, -1):
                        pending[kind] += found
            table = None if state.empty else arrow_table(state, schemas["state"], keys,
                                                               dictionary=True)
            files.write(plan, batch, "state", table, group)
        if steps:  # the job's late and quarantined events: one file each
            last = steps[-1][0]
            files.write(plan, last, "late", event_table(pending["late"], schemas["late"], keys),
                        group)
            files.write(plan, last, "quarantine", event_table(pending["quarantine"],
                                                              schemas["quarantine"]), group)
        if plan.finish:  # the end-of-input flush: the plan's last batch
            batch = plan.batches[-1][0]
            for b in group:
                files.add(count_row(batch, "input", b, 0))
            output = output_table(op.finish(state), schemas["output"], batch, keys)
            if emitted is not None:
                emitted(batch, output)
            files.write(plan, batch, "output", output, group)
        return pd.DataFrame(files.rows(), columns=_COLUMNS)


def no_events(plan: StepPlan) -> pd.DataFrame:
    """An empty frame of the events a worker steps (recording columns, sequence, time)."""
    return pd.DataFrame(columns=[*plan.recording_columns, SEQ, TIME])

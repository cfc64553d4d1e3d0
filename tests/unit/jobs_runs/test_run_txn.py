"""The Delta app transactions a run's batches commit under, across its segments."""

from __future__ import annotations

from jobs.runs.run_info import SEGMENT_SHIFT, TXN_SCHEME, RunInfo
from jobs.storage import Txn
from jobs.storage.base import done_already


def run(segments: list[dict]) -> RunInfo:
    return RunInfo(run_id="r", query="q", fingerprint="f", recording="vitals", input_path="p",
                   input_version=3, plan="commit", cuts=[0, 10, 20], files=[], buckets=2,
                   operator="op@1", segments=segments)


def test_a_first_replay_commits_batch_ids_under_one_app_id_per_table():
    assert run([]).txn("output", 4) == Txn("r/output", 4)
    assert run([{"segment": 0}]).txn("state", 2) == Txn("r/state", 2)


def test_a_continuation_commits_under_the_same_app_id_above_every_earlier_segment():
    segments = [{"segment": 0}, {"segment": 1, "txn": TXN_SCHEME}]
    txn = run(segments).txn("output", 2)
    assert txn == Txn("r/output", (1 << SEGMENT_SHIFT) + 2)
    assert not done_already(run([{"segment": 0}]).txn("output", 10**6).version, txn)
    later = run([*segments, {"segment": 2, "txn": TXN_SCHEME}]).txn("output", 0)
    assert not done_already(txn.version, later) and done_already(later.version, txn)


def test_a_segment_planned_before_the_scheme_keeps_its_app_ids():
    assert run([{"segment": 0}, {"segment": 1}]).txn("manifest", 3) == Txn("r/s1/manifest", 3)

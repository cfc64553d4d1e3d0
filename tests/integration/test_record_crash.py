"""``reprise record`` SIGKILLed at every commit boundary and at random instants (a small
campaign of ``record_kills.py``, which runs 20 kills): all or nothing, then exactly once."""

from __future__ import annotations

import signal
from pathlib import Path

from record_kills import AIMED, campaign


def test_record_killed_anywhere_is_all_or_nothing_and_completes_once(tmp_path: Path) -> None:
    log = campaign(tmp_path, kills=10, seed=11, rows=150, say=lambda _: None)
    aimed = [kill for _, plan in AIMED for kill in plan]
    assert [rc for kill, rc in log if kill.startswith("c")] == [-signal.SIGKILL] * len(aimed)
    assert sum(rc == -signal.SIGKILL for _, rc in log) >= 10
    assert any(kill[0] in "mw" for kill, _ in log)  # random instants too


def test_record_on_delta_spark_killed_at_each_commit_boundary_is_all_or_nothing(
        tmp_path: Path, delta_spark_storage) -> None:
    # (the first round's aimed kills only: before any commit, after the quarantine commit,
    # after a roll-back and a new quarantine commit, after the recording commit; each run
    # starts a JVM with the Delta jars)
    aimed = AIMED[0][1]
    log = campaign(tmp_path, kills=len(aimed), seed=11, rows=60, say=lambda _: None,
                   backend="delta-spark")
    assert log == [*((kill, -signal.SIGKILL) for kill in aimed), ("none", 0)]

"""A replay that kills its own process after the table commits of one batch's Spark job and
before that job's manifest commit (run as a script by ``test_crash.py``).

Usage: ``python crash_replay.py WAREHOUSE QUERY PLAN RUN_ID BATCH`` with ``REPRISE_BATCHES_PER_JOB``
in the environment.
"""

from __future__ import annotations

import os
import signal
import sys

from engine.catalog import load_catalog
from jobs.runs.replay import Replay
from jobs.runtime.spark_session import get_spark
from jobs.settings import load_settings
from jobs.storage import open_storage
from jobs.warehouse import Warehouse


def dying_replay(warehouse: str, run_id: str, batch: str) -> Replay:
    """A replay on ``warehouse`` that kills its own process after the table commits of run
    ``run_id``'s Spark job holding ``batch`` and before that job's manifest commit."""
    settings = load_settings()
    spark = get_spark(settings=settings)

    def die_before_manifest(run: str, group: list[int]) -> None:
        if run == run_id and int(batch) in group:
            os.kill(os.getpid(), signal.SIGKILL)

    return Replay(spark, open_storage(spark, settings=settings), Warehouse.at(warehouse),
                  load_catalog(settings.catalog), settings=settings,
                  before_manifest=die_before_manifest)


def main(warehouse: str, query: str, plan: str, run_id: str, batch: str) -> None:
    replay = dying_replay(warehouse, run_id, batch)
    replay.run(replay.prepare(query, plan=plan, run_id=run_id))


if __name__ == "__main__":
    main(*sys.argv[1:])

"""A continuation that kills its own process after the table commits of the Spark job holding one
batch and before that job's manifest commit (run as a script by ``test_continuation_crash.py``).

Usage: ``python crash_continue.py WAREHOUSE QUERY RUN_ID BATCH`` with ``REPRISE_BATCHES_PER_JOB``
in the environment.
"""

from __future__ import annotations

import os
import signal
import sys

from engine.catalog import load_catalog
from jobs.continuation import continue_query
from jobs.replay import Replay
from jobs.settings import load_settings
from jobs.spark import get_spark
from jobs.storage import open_storage
from jobs.warehouse import Warehouse


def main(warehouse: str, query: str, run_id: str, batch: str) -> None:
    settings = load_settings()
    spark = get_spark(settings=settings)

    def die_before_manifest(run: str, group: list[int]) -> None:
        if run == run_id and int(batch) in group:
            os.kill(os.getpid(), signal.SIGKILL)

    replay = Replay(spark, open_storage(spark, settings=settings), Warehouse.at(warehouse),
                    load_catalog(settings.catalog), settings=settings,
                    before_manifest=die_before_manifest)
    continue_query(replay, query, run_id=run_id)


if __name__ == "__main__":
    main(*sys.argv[1:])

"""A shared replay that kills its own process after one run's table commits of the Spark job
holding a batch and before that run's manifest commit (run as a script by
``test_shared_replay.py``).

Usage: ``python crash_shared_replay.py WAREHOUSE CATALOG PLAN RUN_ID BATCH QUERY...``, on the
backend ``REPRISE_DELTA_BACKEND`` names.
"""

from __future__ import annotations

import os
import signal
import sys

from engine.catalog import load_catalog
from jobs.runs.replay import Replay
from jobs.runtime.spark_session import get_spark
from jobs.settings import load_settings
from jobs.shared.shared_run import SharedReplay
from jobs.storage import open_storage
from jobs.warehouse import Warehouse


def main(warehouse: str, catalog: str, plan: str, run_id: str, batch: str, *queries: str
         ) -> None:
    settings = load_settings()
    spark = get_spark(settings=settings)

    def die_before_manifest(run: str, group: list[int]) -> None:
        if run == run_id and int(batch) in group:
            os.kill(os.getpid(), signal.SIGKILL)

    replay = Replay(spark, open_storage(spark, settings=settings),
                    Warehouse.at(warehouse), load_catalog(catalog), settings=settings,
                    exchange="direct", before_manifest=die_before_manifest)
    runner = SharedReplay(replay)
    runner.run(runner.prepare(list(queries), plan=plan))


if __name__ == "__main__":
    main(*sys.argv[1:])

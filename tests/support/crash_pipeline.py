"""A pipeline replay that kills its own process after the table commits of one batch's Spark
job of one of the chain's runs and before that job's manifest commit (run as a script by
``test_pipeline_continue_crash.py``).

Usage: ``python crash_pipeline.py WAREHOUSE QUERY PLAN KILLED_RUN BATCH``.
"""

from __future__ import annotations

import sys

from crash_replay import dying_replay


def main(warehouse: str, query: str, plan: str, killed_run: str, batch: str) -> None:
    replay = dying_replay(warehouse, killed_run, batch)
    replay.run(replay.prepare(query, plan=plan))


if __name__ == "__main__":
    main(*sys.argv[1:])

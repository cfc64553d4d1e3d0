"""A continuation that kills its own process after the table commits of the Spark job holding one
batch and before that job's manifest commit (run as a script by ``test_continuation_crash.py``).

Usage: ``python crash_continue.py WAREHOUSE QUERY RUN_ID BATCH`` with ``REPRISE_BATCHES_PER_JOB``
in the environment.
"""

from __future__ import annotations

import sys

from crash_replay import dying_replay  # beside this script, which runs as a file

from jobs.runs.continuation import continue_query


def main(warehouse: str, query: str, run_id: str, batch: str) -> None:
    continue_query(dying_replay(warehouse, run_id, batch), query, run_id=run_id)


if __name__ == "__main__":
    main(*sys.argv[1:])

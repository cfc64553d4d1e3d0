"""A shared run's tables against the same query replayed on its own (Dagster's
``equals_standalone`` check)."""

from __future__ import annotations

import pandas as pd

from jobs.runs.pipeline_stage import stage_over, upstream_read
from jobs.runs.replay import Replay, run_id_of
from jobs.runs.run_info import read_run

COMPARED = ("output", "late", "quarantine")


#: The id of the standalone replay a shared run is compared with: ``<run id>-standalone``.
STANDALONE_SUFFIX = "-standalone"

def table_rows(replay: Replay, run_id: str, kind: str) -> pd.DataFrame:
    """The rows of run ``run_id``'s table ``kind`` in a canonical order (empty if none)."""
    path = replay.warehouse.run_table(run_id, kind)
    if not replay.storage.exists(path):
        return pd.DataFrame()
    frame = replay.storage.read_arrow(path).to_pandas()
    return frame.sort_values(list(frame.columns), kind="stable").reset_index(drop=True)


def compare_with_standalone(replay: Replay, run_id: str) -> list[dict]:
    """Replay run ``run_id``'s query alone (run ``<run_id>-standalone``: same input version and
    batch plan; a pipeline stage: over the same upstream run; resumed or reused if it exists)
    and list the tables whose rows differ (empty: the shared run equals the standalone one)."""
    info = read_run(replay.warehouse, run_id)
    alone_id = f"{run_id}{STANDALONE_SUFFIX}"
    upstream, _ = upstream_read(replay, info)
    alone = (replay.prepare(info.query, plan=info.plan, run_id=alone_id,
                            version=info.input_version) if upstream is None
             else stage_over(replay, replay.context(info.query),
                             read_run(replay.warehouse, upstream), alone_id, run_id_of))
    replay.run(alone)
    differences = []
    for kind in COMPARED:
        shared, standalone = (table_rows(replay, run_id, kind),
                              table_rows(replay, alone.run_id, kind))
        if len(shared) != len(standalone) or not shared.equals(standalone):
            differences.append({"table": kind, "shared_rows": len(shared),
                                "standalone_rows": len(standalone)})
    return differences

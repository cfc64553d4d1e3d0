"""What a query's new run changes against the run of its previous materialisation, when the
query's definition changed in between and both read the same recording version (the Dagster
asset's diff summary and its check ``changes_since_previous``)."""

from __future__ import annotations

from jobs.diff.report import DiffReport
from jobs.diff.run_diff import diff_sides
from jobs.diff.sides import DiffError, check_same_identity, is_run, side_of_run
from jobs.runs.replay import Replay
from jobs.runs.run_info import read_run


def changes_since(runner: Replay, previous_run_id: str | None, run_id: str
                  ) -> tuple[DiffReport | None, str]:
    """The diff of run ``run_id`` (B) against ``previous_run_id`` (A), or None and why there is
    none: no previous run, the same run (continued), the definition unchanged, another
    recording version, or runs that cannot be compared."""
    if previous_run_id is None:
        return None, "no previous materialisation"
    if previous_run_id == run_id:
        return None, "the previous materialisation's run, continued: the definition is unchanged"
    if not is_run(runner, previous_run_id):
        return None, f"the previous run {previous_run_id} is gone"
    previous, current = read_run(runner.warehouse, previous_run_id), read_run(runner.warehouse,
                                                                              run_id)
    if previous.fingerprint == current.fingerprint:
        return None, "the definition is unchanged"
    try:
        a, b = side_of_run(runner, previous_run_id, previous), side_of_run(runner, run_id,
                                                                           current)
        if a.reads != b.reads:
            return None, (f"the previous run read {a.reads}, this one {b.reads}: another "
                          "recording version")
        check_same_identity((previous_run_id, a.query), (run_id, b.query), runner.catalog)
        return diff_sides(runner, a, b, limit=5), ""
    except DiffError as exc:
        return None, str(exc)

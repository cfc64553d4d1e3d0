"""``reprise gc``: remove superseded runs and vacuum the old table versions of the kept ones."""

from __future__ import annotations

from dataclasses import dataclass, field

from jobs.runs.listing import run_rank, summarize
from jobs.runs.replay import Replay
from jobs.runs.run_info import read_run
from jobs.storage.object_paths import remove_tree
from jobs.storage.vacuum import vacuum

#: The tables of a run (``input``: the merged input of a multi-input query).
TABLES = ("output", "late", "quarantine", "state", "manifest", "input")


@dataclass
class GcReport:
    """Runs removed, runs kept, and data files vacuumed (per kept run)."""

    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    vacuumed: dict[str, int] = field(default_factory=dict)


def superseded(replay: Replay, keep: int = 1) -> tuple[list[str], list[str]]:
    """(runs to remove, completed runs to keep): per query, the ``keep`` completed runs over the
    newest input versions (then the newest made) stay, and so does every run that is not
    complete (in progress or resumable); older completed runs of the query are superseded."""
    if keep < 1:
        raise ValueError("keep at least one run per query")
    by_query: dict[str, list[tuple]] = {}
    for run_id in replay.warehouse.runs():
        if summarize(replay.warehouse, run_id).status != "complete":
            continue
        info = read_run(replay.warehouse, run_id)
        rank = run_rank(replay.warehouse.run_dir(run_id), info)
        by_query.setdefault(info.query, []).append((rank, run_id))
    remove, kept = [], []
    for runs in by_query.values():
        ordered = [run_id for _, run_id in sorted(runs, reverse=True)]
        kept += ordered[:keep]
        remove += ordered[keep:]
    return sorted(remove), sorted(kept)


def collect(replay: Replay, keep: int = 1) -> GcReport:
    """Remove the superseded runs (:func:`superseded`) and vacuum every table of the kept
    completed runs down to its latest version; a state table also keeps the versions after its
    last two batches (what a continuation may rewind to)."""
    remove, kept = superseded(replay, keep)
    report = GcReport(removed=remove, kept=kept)
    for run_id in remove:
        remove_tree(replay.warehouse.run_dir(run_id))
    for run_id in kept:
        manifest = replay.manifest(run_id).to_pandas()
        batches = manifest[manifest["kind"] == "batch"]
        states = [int(v) for v in batches["state_version"].iloc[-2:].dropna()]
        count = 0
        for table in TABLES:
            path = replay.warehouse.run_table(run_id, table)
            if replay.storage.exists(path):
                count += len(vacuum(path, keep_versions=states if table == "state" else []))
        report.vacuumed[run_id] = count
    return report


__all__ = ["GcReport", "collect", "superseded"]

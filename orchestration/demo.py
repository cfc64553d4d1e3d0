"""``make demo``: generate the sample recordings, materialize every asset and check through
Dagster (in-process), print a summary table. Exit status 1 when any check failed."""

import sys

import dagster as dg
from rich.console import Console
from rich.table import Table

from .automation import ALL_JOB
from .definitions import build_definitions
from .resources import default_resources

#: Keep Dagster's event log out of the console (it is in the instance, see `make ui`).
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
#: Sample recordings: generator -> (keys, events).
SAMPLES = {"vitals": (200, 200_000), "ticks": (50, 100_000), "ads": (100, 100_000)}


def generate_samples(console: Console) -> None:
    """Write the sample recordings (replacing earlier ones; old versions stay readable)."""
    from jobs.recordings.store import generate_recording

    resources = default_resources()
    warehouse, spark = resources["warehouse"], resources["spark"]
    storage, catalog = warehouse.storage(spark), warehouse.load_catalog()
    for kind, (keys, events) in SAMPLES.items():
        with console.status(f"generating {kind}..."):
            versions = generate_recording(storage, warehouse.warehouse(), catalog, kind,
                                          keys=keys, events=events, seed=7, commits=10,
                                          replace=True)
        console.print(f"generated {kind}: {events:,} events, version {versions[kind]}")


def summary(result: dg.ExecuteInProcessResult) -> tuple[Table, bool]:
    """The summary table of a run of the replay_all job, and whether every check passed."""
    checks: dict[tuple[str, str], bool] = {}
    for evaluation in result.get_asset_check_evaluations():
        checks[(evaluation.asset_key.path[-1], evaluation.check_name)] = evaluation.passed
    table = Table("query", "events", "batches", "events/s", "peak state rows", "state bytes",
                  "late", "reference check", "quality check", "reconciles", title="Reprise demo")
    mark = {True: "[green]pass[/]", False: "[red]FAIL[/]", None: "[red]not run[/]"}
    for event in result.get_asset_materialization_events():
        key = event.asset_key
        if key.path[0] != "replays":
            continue
        meta = {k: v.value for k, v in event.materialization.metadata.items()}
        name = key.path[-1]
        table.add_row(name, f"{meta['rows_in']:,}", str(meta["batches"]),
                      f"{meta['events_per_s']:,.0f}", f"{meta['peak_state_rows']:,}",
                      f"{meta['peak_state_bytes']:,}", f"{meta['late']:,}",
                      mark[checks.get((name, "matches_reference"))],
                      mark[checks.get((name, "quality"))],
                      mark[checks.get((name, "manifest_reconciles"))])
    return table, result.success and all(checks.values()) and bool(checks)


def main() -> int:
    console = Console(width=None if sys.stdout.isatty() else 140)
    generate_samples(console)
    defs = build_definitions()
    with console.status("materializing every asset and check through Dagster..."):
        result = defs.resolve_job_def(ALL_JOB).execute_in_process(
            instance=dg.DagsterInstance.get(), raise_on_error=False, run_config=QUIET)
    table, ok = summary(result)
    console.print(table)
    console.print("all checks passed" if ok else "[red]some checks failed[/]")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""``make demo``: generate the sample recordings, materialize every asset and check through
Dagster (in-process), print a summary table; then append a commit to the vitals recording and
materialize one replay again, which continues its run (the segment is printed). Exit status 1
when any check failed."""

import sys

import dagster as dg
from rich.console import Console
from rich.table import Table

from jobs.cli.process_exit import exit_now
from orchestration.automation import ALL_JOB
from orchestration.definitions import build_definitions
from orchestration.resources import default_resources

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


#: The replay the demo continues after appending a commit to its recording.
CONTINUED = "vitals_hr_1m"
#: Events of that commit (the recording's first ones, one day later).
APPENDED = 2_000


def append_commit() -> int:
    """Append :data:`APPENDED` events to the vitals recording as one commit; its new version."""
    from dataclasses import asdict

    import pyarrow as pa
    import pyarrow.compute as pc

    from jobs.execution.arrival import input_index, overlapping
    from jobs.execution.input_files import read_range

    resources = default_resources()
    warehouse, spark = resources["warehouse"], resources["spark"]
    storage, path = warehouse.storage(spark), warehouse.warehouse().recording("vitals")
    files = [asdict(f) for f in input_index(storage, path, storage.version(path))]
    first = pa.concat_tables(part.table for part in read_range(  # (in arrival order)
        overlapping(files, 0, APPENDED), storage.schema(path).names, [], 0, APPENDED))
    later = pc.add(first["ts"], pa.scalar(86_400_000_000, pa.duration("us")))
    storage.write(first.set_column(first.schema.get_field_index("ts"), "ts", later), path,
                  mode="append")
    return storage.version(path)


def continue_demo(defs: dg.Definitions, console: Console) -> bool:
    """Record a new commit, materialize :data:`CONTINUED` again (it continues its run) with its
    checks, and print the segment; whether it and its checks succeeded."""
    version = append_commit()
    key = dg.AssetKey(["replays", CONTINUED])
    job = dg.define_asset_job("continue_demo", selection=dg.AssetSelection.assets(key))
    defs = dg.Definitions.merge(defs, dg.Definitions(jobs=[job]))
    with console.status(f"continuing {CONTINUED} over vitals v{version}..."):
        result = defs.resolve_job_def("continue_demo").execute_in_process(
            instance=dg.DagsterInstance.get(), raise_on_error=False, run_config=QUIET)
    for event in result.get_asset_materialization_events():
        meta = {k: v.value for k, v in event.materialization.metadata.items()}
        console.print(f"continued {CONTINUED} (run {meta['run_id']}): segment {meta['segment']},"
                      f" v{meta.get('segment_from_version')} -> v{meta.get('segment_to_version')}"
                      f", {meta.get('new_events', 0):,} new events, "
                      f"{meta['rows_in']:,} events in all", highlight=False)
    checks = [e.passed for e in result.get_asset_check_evaluations()]
    console.print(f"checks after the continuation: {sum(checks)} of {len(checks)} passed")
    return result.success and bool(checks) and all(checks)


def main() -> int:
    console = Console(width=None if sys.stdout.isatty() else 140)
    generate_samples(console)
    defs = build_definitions()
    with console.status("materializing every asset and check through Dagster..."):
        result = defs.resolve_job_def(ALL_JOB).execute_in_process(
            instance=dg.DagsterInstance.get(), raise_on_error=False, run_config=QUIET)
    table, ok = summary(result)
    console.print(table)
    ok = continue_demo(defs, console) and ok
    console.print("all checks passed" if ok else "[red]some checks failed[/]")
    return 0 if ok else 1


if __name__ == "__main__":
    exit_now(main())

"""Jobs per catalog group, the nightly schedule, and the new-recording-version sensor."""


import json

import dagster as dg

from engine.catalog import Catalog
from orchestration.assets import recording_key, replay_key
from orchestration.resources import WarehouseResource

ALL_JOB = "replay_all"


def build_jobs(catalog: Catalog, groups: set[str]) -> list:
    """One job per asset group, and one for everything (assets and their checks)."""
    jobs = [dg.define_asset_job(f"{group}_job", selection=dg.AssetSelection.groups(group),
                                description=f"Materialize the {group} assets and their checks")
            for group in sorted(groups)]
    jobs.append(dg.define_asset_job(ALL_JOB, selection=dg.AssetSelection.all(),
                                    description="Every recording and replay, with all checks"))
    return jobs


def nightly_schedule() -> dg.ScheduleDefinition:
    """Bring every replay up to date at 03:00 UTC (each continues its latest run)."""
    return dg.ScheduleDefinition(name="nightly_replay", job_name=ALL_JOB,
                                 cron_schedule="0 3 * * *", execution_timezone="UTC",
                                 default_status=dg.DefaultScheduleStatus.RUNNING)


def build_sensor(catalog: Catalog, replayable: set[str]) -> dg.SensorDefinition:
    """One run request per recording that gained a Delta version (cursor: version per recording);
    the requested replays (those of a pipeline whose first stage reads it too) continue their
    latest runs with the new commits.

    The first evaluation records the current versions as the baseline and requests nothing.
    """
    readers = {name: sorted(q.name for q in catalog.queries.values()
                            if name in q.chain[0].inputs.values() and q.name in replayable)
               for name in catalog.recordings}

    @dg.sensor(name="new_recording_versions", job_name=ALL_JOB, minimum_interval_seconds=60,
               description="Replay the queries of a recording when it gains a Delta version",
               default_status=dg.DefaultSensorStatus.RUNNING)
    def new_recording_versions(context: dg.SensorEvaluationContext,
                               warehouse: WarehouseResource) -> dg.SensorResult | dg.SkipReason:
        from jobs.storage.versions import table_version

        seen = json.loads(context.cursor) if context.cursor else None
        wh = warehouse.warehouse()
        now = {name: table_version(wh.recording(name)) for name in catalog.recordings}
        if seen is None:
            return dg.SensorResult(skip_reason="baseline recorded", cursor=json.dumps(now))
        requests = [
            dg.RunRequest(run_key=f"{name}@v{version}",
                          asset_selection=[recording_key(name),
                                           *(replay_key(q) for q in readers[name])],
                          tags={"reprise/recording": name, "reprise/version": str(version),
                                "reprise/mode": "continue"})
            for name, version in sorted(now.items())
            if version is not None and version != seen.get(name) and readers[name]]
        if not requests:
            return dg.SensorResult(skip_reason="no recording changed", cursor=json.dumps(now))
        return dg.SensorResult(run_requests=requests, cursor=json.dumps(now))

    return new_recording_versions

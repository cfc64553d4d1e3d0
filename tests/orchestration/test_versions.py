"""Code and data versions of the replay assets, as Dagster's own staleness resolver sees them:
a materialisation that finds nothing new keeps the data version (nothing downstream turns
stale), a new recording version gives a new one, and a changed query definition makes the
replay stale."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
from dagster._core.definitions.data_version import StaleCauseCategory, StaleStatus
from dagster._utils.test.data_versions import get_stale_status_resolver
from helpers import vitals_only_catalog

from jobs.recordings.store import generate_recording
from orchestration.definitions import build_definitions

VITALS = dg.AssetKey(["recordings", "vitals"])
REPLAY = dg.AssetKey(["replays", "vitals_hr_1m"])
REPORT = dg.AssetKey(["report"])



@dg.asset(key=REPORT, deps=[REPLAY], code_version="1")
def report() -> None:
    """A downstream asset of the replay, as a user's own would be."""


def definitions(schemas: Path) -> dg.Definitions:
    return dg.Definitions.merge(build_definitions(str(schemas)),
                                dg.Definitions(assets=[report]))


def materialize(defs: dg.Definitions, instance: dg.DagsterInstance, *keys: dg.AssetKey
                ) -> dict[dg.AssetKey, str]:
    """Materialise ``keys`` (without their checks); the data version each has then."""
    result = dg.materialize(list(defs.assets), instance=instance, resources=defs.resources,
                            selection=list(keys))
    assert result.success
    resolver = get_stale_status_resolver(instance, list(defs.assets))
    return {key: resolver.get_current_data_version(key).value for key in keys}


def status(defs: dg.Definitions, instance: dg.DagsterInstance, key: dg.AssetKey):
    """Dagster's stale status of ``key`` and its causes."""
    resolver = get_stale_status_resolver(instance, list(defs.assets))
    return resolver.get_status(key), resolver.get_stale_causes(key)


def test_data_versions_follow_the_inputs_and_code_versions_the_definition(
        spark, storage, catalog, warehouse, monkeypatch, tmp_path):
    monkeypatch.setenv("REPRISE_WAREHOUSE", str(warehouse.root))
    generate_recording(storage, warehouse, catalog, "vitals", keys=4, events=1_000, seed=5,
                       commits=2)
    schemas = vitals_only_catalog(tmp_path)
    defs = definitions(schemas)
    graph = defs.resolve_asset_graph()
    assert graph.get(REPLAY).code_version  # the definition's fingerprint
    instance = dg.DagsterInstance.ephemeral()

    first = materialize(defs, instance, VITALS, REPLAY, REPORT)
    assert status(defs, instance, REPORT)[0] == StaleStatus.FRESH

    # Nothing new: the same data version, and the downstream asset stays fresh.
    again = materialize(defs, instance, VITALS, REPLAY)
    assert again == {VITALS: first[VITALS], REPLAY: first[REPLAY]}
    assert status(defs, instance, REPLAY)[0] == StaleStatus.FRESH
    assert status(defs, instance, REPORT)[0] == StaleStatus.FRESH

    # A new recording version: a new data version, and downstream is stale.
    vitals = warehouse.recording("vitals")
    later = storage.read_arrow(vitals).slice(0, 30)

    def append(days: int) -> None:
        shift = pa.scalar(days * 86_400_000_000, pa.duration("us"))
        storage.write(later.set_column(later.schema.get_field_index("ts"), "ts",
                                       pc.add(later["ts"], shift)), vitals, mode="append")

    append(1)
    newer = materialize(defs, instance, VITALS, REPLAY)
    assert newer[VITALS] != first[VITALS] and newer[REPLAY] != first[REPLAY]
    stale, causes = status(defs, instance, REPORT)
    assert stale == StaleStatus.STALE
    assert [(c.asset_key, c.category) for c in causes] == [(REPORT, StaleCauseCategory.DATA)]

    # The replay alone, the recording's asset not materialised since its new version: the data
    # version comes from the version the run read, not from what Dagster last recorded of it.
    append(2)
    alone = materialize(defs, instance, REPLAY)
    assert alone[REPLAY] not in (first[REPLAY], newer[REPLAY])
    newer = alone

    # A changed query definition: the replay is stale by its code version, before any run.
    query = schemas / "queries" / "vitals_hr_1m.yaml"
    query.write_text(query.read_text().replace("lateness: 10s", "lateness: 20s"))
    changed = definitions(schemas)
    assert changed.resolve_asset_graph().get(REPLAY).code_version != graph.get(
        REPLAY).code_version
    stale, causes = status(changed, instance, REPLAY)
    assert stale == StaleStatus.STALE
    assert StaleCauseCategory.CODE in {c.category for c in causes}
    redone = materialize(changed, instance, REPLAY)  # a fresh run of the new definition
    assert redone[REPLAY] != newer[REPLAY]
    assert status(changed, instance, REPLAY)[0] == StaleStatus.FRESH

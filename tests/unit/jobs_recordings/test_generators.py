"""Unit tests of the deterministic synthetic recording generators."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from engine.catalog import load_catalog
from jobs.recordings.generators import (
    GENERATORS,
    VITALS_MAX_DISORDER_US,
    Generated,
    GeneratorError,
    generate,
)

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"
START_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z
KINDS = ("vitals", "ads", "ticks")


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(SCHEMAS)


@pytest.fixture(scope="module")
def vitals() -> pa.Table:
    """200 patients with 600 readings each (50 minutes), in arrival order."""
    return pa.concat_tables(generate("vitals", keys=200, events=120_000, seed=7).commits)


def _us(column: pa.ChunkedArray) -> np.ndarray:
    return column.cast(pa.int64()).to_numpy()


def _by_key(table: pa.Table, key: str) -> dict[str, np.ndarray]:
    """Row positions (arrival order) of each key, in arrival order."""
    keys = table[key].to_numpy(zero_copy_only=False)
    order = np.argsort(keys, kind="stable")
    bounds = np.flatnonzero(keys[order][1:] != keys[order][:-1]) + 1
    return {keys[g[0]]: g for g in np.split(order, bounds)}


def _runs_above(values: np.ndarray, threshold: int) -> np.ndarray:
    """Lengths of the runs of consecutive values above ``threshold``."""
    edges = np.diff(np.concatenate(([0], (values > threshold).astype(int), [0])))
    return np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)


def _equal(a: Generated, b: Generated) -> bool:
    return (len(a.commits) == len(b.commits)
            and all(x.equals(y) for x, y in zip(a.commits, b.commits, strict=True))
            and a.extra.keys() == b.extra.keys()
            and all(a.extra[k].equals(b.extra[k]) for k in a.extra))


@pytest.mark.parametrize("kind", KINDS)
def test_same_arguments_give_identical_tables(kind):
    a = generate(kind, keys=30, events=5_000, seed=11, commits=4)
    b = generate(kind, keys=30, events=5_000, seed=11, commits=4)
    assert _equal(a, b)


@pytest.mark.parametrize("kind", KINDS)
def test_different_seed_gives_different_tables(kind):
    a = generate(kind, keys=30, events=5_000, seed=11, commits=4)
    b = generate(kind, keys=30, events=5_000, seed=12, commits=4)
    assert not _equal(a, b)


@pytest.mark.parametrize("kind", KINDS)
def test_schema_rows_and_commit_sizes(kind, catalog):
    generated = generate(kind, keys=17, events=1_003, seed=1, commits=10)
    schema = catalog.recording(kind).arrow_schema()
    assert [c.num_rows for c in generated.commits] == [101] * 3 + [100] * 7
    for commit in generated.commits:
        assert commit.schema.equals(schema)
    for name, table in generated.extra.items():
        assert table.schema.equals(catalog.recording(name).arrow_schema())


@pytest.mark.parametrize("kind", KINDS)
def test_fewer_events_than_commits_keeps_empty_commits(kind, catalog):
    generated = generate(kind, keys=3, events=4, seed=1, commits=6)
    assert [c.num_rows for c in generated.commits] == [1, 1, 1, 1, 0, 0]
    assert all(c.schema.equals(catalog.recording(kind).arrow_schema())
               for c in generated.commits)


@pytest.mark.parametrize("kind", KINDS)
def test_no_events(kind):
    generated = generate(kind, keys=5, events=0, seed=1, commits=2)
    assert [c.num_rows for c in generated.commits] == [0, 0]


@pytest.mark.parametrize(("kind", "key"), [("vitals", "patient_id"), ("ticks", "symbol")])
def test_more_keys_than_events(kind, key):
    table = pa.concat_tables(generate(kind, keys=50, events=20, seed=1).commits)
    assert table.num_rows == 20
    assert len(pc.unique(table[key])) == 20


def test_key_strings_are_zero_padded():
    vitals = pa.concat_tables(generate("vitals", keys=1000, events=2_000, seed=1).commits)
    ticks = pa.concat_tables(generate("ticks", keys=1000, events=2_000, seed=1).commits)
    assert set(vitals["patient_id"].to_pylist()) == {f"p{i:04d}" for i in range(1000)}
    assert set(ticks["symbol"].to_pylist()) == {f"S{i:04d}" for i in range(1000)}


def test_start_sets_the_first_timestamps():
    table = pa.concat_tables(
        generate("vitals", keys=10, events=100, seed=1, start="2026-03-01T12:00:00Z").commits)
    first = START_US + 59 * 86_400_000_000 + 12 * 3_600_000_000
    assert first <= _us(table["ts"]).min() < first + 5_000_000


def test_vitals_cadence_is_regular_per_patient(vitals):
    ts = _us(vitals["ts"])
    for rows in _by_key(vitals, "patient_id").values():
        assert set(np.diff(np.sort(ts[rows]))) == {5_000_000}
    assert START_US <= ts.min() < START_US + 5_000_000


def test_vitals_disorder_is_bounded_but_present(vitals):
    ts = _us(vitals["ts"])
    lateness = np.maximum.accumulate(ts) - ts  # how far behind the newest event seen so far
    assert lateness.max() <= VITALS_MAX_DISORDER_US
    late_patients = 0
    for rows in _by_key(vitals, "patient_id").values():
        own = ts[rows]
        behind = np.maximum.accumulate(own) - own
        assert behind.max() <= VITALS_MAX_DISORDER_US
        late_patients += bool(behind.max() > 0)
    assert late_patients > 100


def test_vitals_ranges(vitals):
    hr = vitals["heart_rate"].to_numpy()
    spo2 = vitals["spo2"].to_numpy()
    assert hr.min() >= 40 and hr.max() <= 180
    assert spo2.min() >= 88 and spo2.max() <= 100
    assert np.mean((spo2 >= 95) & (spo2 <= 99)) > 0.9
    assert np.mean(hr <= 100) > 0.9
    desaturated = spo2 < 92
    assert desaturated.any()
    assert (hr[desaturated] > 100).all()  # desaturation happens during tachycardia episodes


def test_vitals_episodes_are_runs_above_100(vitals):
    ts = _us(vitals["ts"])
    hr = vitals["heart_rate"].to_numpy()
    with_episode = 0
    episodes = []
    for rows in _by_key(vitals, "patient_id").values():
        runs = _runs_above(hr[rows[np.argsort(ts[rows])]], 100)
        with_episode += bool((runs >= 5).any())
        episodes.append(len(runs))
    assert with_episode > 0.7 * len(episodes)
    assert 0.5 <= np.mean(episodes) <= 3.0  # ~1-3 episodes per patient-hour, 50 min each


def test_ads_campaign_lookup_covers_all_ads(catalog):
    generated = generate("ads", keys=100, events=20_000, seed=3)
    events = pa.concat_tables(generated.commits)
    lookup = generated.extra["ad_campaigns"]
    assert list(generated.extra) == ["ad_campaigns"]
    assert lookup["ad_id"].to_pylist() == list(range(100))
    assert lookup["campaign_id"].to_pylist() == [i // 10 for i in range(100)]
    assert set(_us(lookup["valid_from"])) == {START_US}
    assert set(events["ad_id"].to_pylist()) <= set(lookup["ad_id"].to_pylist())
    assert len(set(events["ad_id"].to_pylist())) == 100


def test_ads_campaign_count_is_keys_over_ten():
    lookup = generate("ads", keys=15, events=10, seed=3).extra["ad_campaigns"]
    assert lookup["campaign_id"].to_pylist() == [0] * 15  # max(1, 15 // 10) = 1 campaign
    lookup = generate("ads", keys=25, events=10, seed=3).extra["ad_campaigns"]
    assert lookup["campaign_id"].to_pylist() == [0] * 10 + [1] * 15


def test_ads_events_look_like_ysb():
    events = pa.concat_tables(generate("ads", keys=100, events=50_000, seed=3).commits)
    t = _us(events["event_time"])
    assert (np.diff(t) > 0).all()
    assert 8_000 < len(t) / ((t[-1] - START_US) / 1e6) < 12_000
    share = pc.value_counts(events["event_type"]).to_pylist()
    assert {s["values"] for s in share} == {"view", "click", "purchase"}
    assert all(abs(s["counts"] / len(t) - 1 / 3) < 0.02 for s in share)
    assert set(events["ad_type"].to_pylist()) == {
        "banner", "modal", "sponsored-search", "mail", "mobile"}
    uuid = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
    assert pc.all(pc.match_substring_regex(events["user_id"], uuid)).as_py()
    assert pc.all(pc.match_substring_regex(events["page_id"], uuid)).as_py()
    assert len(pc.unique(events["user_id"])) == len(t)
    octet = r"(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
    ip = rf"^10\.{octet}\.{octet}\.{octet}$"
    assert pc.all(pc.match_substring_regex(events["ip"], ip)).as_py()


def test_ticks_prices_volumes_and_order():
    ticks = pa.concat_tables(generate("ticks", keys=20, events=20_000, seed=5).commits)
    price = ticks["price"].to_numpy()
    volume = ticks["volume"].to_numpy()
    assert price.min() > 0.01
    assert np.array_equal(price, np.round(price, 2))
    assert volume.min() >= 1 and volume.max() <= 1000
    ts = _us(ticks["ts"])
    symbols = ticks["symbol"].to_numpy(zero_copy_only=False)
    assert np.array_equal(np.lexsort((symbols, ts)), np.arange(len(ts)))  # by (ts, symbol)
    for rows in _by_key(ticks, "symbol").values():
        assert set(np.diff(ts[rows])) == {1_000_000}
        assert len(np.unique(price[rows])) > 10  # the price actually walks
        assert 30 < price[rows][0] < 170


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"kind": "weather"}, "kind"), ({"keys": 0}, "keys"), ({"events": -1}, "events"),
     ({"commits": 0}, "commits"), ({"seed": -3}, "seed"), ({"start": "yesterday"}, "start")])
def test_bad_arguments_are_named(kwargs, name):
    args = {"kind": "vitals", "keys": 3, "events": 10, "seed": 1} | kwargs
    with pytest.raises(GeneratorError, match=name):
        generate(args.pop("kind"), **args)


def test_unknown_kind_lists_known_kinds():
    with pytest.raises(GeneratorError, match="ads, ticks, vitals"):
        generate("weather", keys=1, events=1, seed=1)
    assert set(GENERATORS) == set(KINDS)

"""Deterministic synthetic recordings: patient vitals, ad events (YSB) and stock ticks.

Every table is built with vectorised numpy from ``numpy.random.default_rng(seed)`` alone, so the
same arguments always give byte-identical tables. The main recording is returned in arrival order,
split into consecutive commits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import RepriseError

_TS = pa.timestamp("us", tz="UTC")


class GeneratorError(RepriseError):
    """Generator arguments that cannot be used; the message names the argument."""


VITALS_SCHEMA = pa.schema([("patient_id", pa.string()), ("ts", _TS),
                           ("heart_rate", pa.int64()), ("spo2", pa.int64())])
ADS_SCHEMA = pa.schema([("user_id", pa.string()), ("page_id", pa.string()),
                        ("ad_id", pa.int64()), ("ad_type", pa.string()),
                        ("event_type", pa.string()), ("event_time", _TS), ("ip", pa.string())])
AD_CAMPAIGNS_SCHEMA = pa.schema([("ad_id", pa.int64()), ("campaign_id", pa.int64()),
                                 ("valid_from", _TS)])
TICKS_SCHEMA = pa.schema([("symbol", pa.string()), ("ts", _TS), ("price", pa.float64()),
                          ("volume", pa.int64())])

VITALS_CADENCE_US = 5_000_000
VITALS_MAX_DISORDER_US = 20_000_000
VITALS_LATE_FRACTION = 0.05
VITALS_EPISODES_PER_HOUR = 2.0

ADS_EVENT_GAP_US = (50, 150)  # uniform gap between events: ~10,000 events per second
AD_TYPES = ("banner", "modal", "sponsored-search", "mail", "mobile")
EVENT_TYPES = ("view", "click", "purchase")

TICKS_STEP_US = 1_000_000

_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


@dataclass(frozen=True)
class Generated:
    """A generated recording: the main table split into commits, plus tables written once."""

    commits: list[pa.Table]
    extra: dict[str, pa.Table]


def _key_layout(keys: int, events: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Spread ``events`` evenly over ``keys``; return (key index, reading index, key start row)."""
    q, r = divmod(events, keys)
    counts = np.full(keys, q, dtype=np.int64)
    counts[:r] += 1
    first = np.zeros(keys, dtype=np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    key_idx = np.repeat(np.arange(keys, dtype=np.int64), counts)
    reading = np.arange(events, dtype=np.int64) - first[key_idx]
    return key_idx, reading, first


def _names(prefix: str, keys: int, key_idx: np.ndarray) -> pa.Array:
    width = len(str(keys))
    names = pa.array([f"{prefix}{i:0{width}d}" for i in range(keys)], type=pa.string())
    return names.take(pa.array(key_idx))


def _pick(values: tuple[str, ...], idx: np.ndarray) -> pa.Array:
    return pa.array(values, type=pa.string()).take(pa.array(idx))


def _uuids(rng: np.random.Generator, n: int) -> pa.Array:
    """``n`` UUID-like strings (8-4-4-4-12 lowercase hex) from 16 random bytes each."""
    raw = rng.integers(0, 256, size=(n, 16), dtype=np.uint8)
    hexed = np.empty((n, 32), dtype=np.uint8)
    hexed[:, 0::2] = _HEX[raw >> 4]
    hexed[:, 1::2] = _HEX[raw & 0x0F]
    out = np.full((n, 36), ord("-"), dtype=np.uint8)
    for lo, hi, dst in ((0, 8, 0), (8, 12, 9), (12, 16, 14), (16, 20, 19), (20, 32, 24)):
        out[:, dst:dst + hi - lo] = hexed[:, lo:hi]
    offsets = np.arange(n + 1, dtype=np.int32) * 36
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(out.tobytes()))


def _timestamps(us: np.ndarray) -> pa.Array:
    return pa.array(us, type=_TS)


def _split(table: pa.Table, commits: int) -> list[pa.Table]:
    """Consecutive near-equal chunks with ``np.array_split`` semantics (larger chunks first)."""
    q, r = divmod(table.num_rows, commits)
    out, offset = [], 0
    for i in range(commits):
        size = q + (1 if i < r else 0)
        out.append(table.slice(offset, size))
        offset += size
    return out


def generate_vitals(keys: int, events: int, seed: int, commits: int, start_us: int) -> Generated:
    """Patient vitals every 5 s with tachycardia/desaturation episodes and bounded late arrival."""
    rng = np.random.default_rng(seed)
    key_idx, reading, first = _key_layout(keys, events)
    phase = rng.integers(0, VITALS_CADENCE_US, size=keys)
    ts = start_us + phase[key_idx] + reading * VITALS_CADENCE_US

    hr_base = rng.integers(60, 86, size=keys)
    spo2_base = rng.integers(96, 99, size=keys)
    hr_noise = rng.normal(0.0, 3.0, size=events)
    spo2_noise = rng.normal(0.0, 0.8, size=events)
    heart_rate = np.clip(np.rint(hr_base[key_idx] + hr_noise), 45, 99).astype(np.int64)
    spo2 = np.clip(np.rint(spo2_base[key_idx] + spo2_noise), 95, 99).astype(np.int64)

    # Episodes: start at a reading with a Poisson rate, last 6..36 readings (cut at the patient's
    # last reading); heart rate near a per-episode peak above 100, some with spo2 below 92.
    p_start = VITALS_EPISODES_PER_HOUR * VITALS_CADENCE_US / 3_600_000_000
    starts = np.flatnonzero(rng.random(events) < p_start)
    n_ep = starts.size
    last_row = np.append(first[1:], events)  # one past each patient's last reading
    ends = np.minimum(starts + rng.integers(6, 37, size=n_ep), last_row[key_idx[starts]])
    peak = rng.integers(105, 151, size=n_ep)
    desat = rng.random(n_ep) < 0.4
    low_spo2 = rng.integers(88, 92, size=n_ep)
    depth = np.bincount(starts, minlength=events + 1) - np.bincount(ends, minlength=events + 1)
    in_ep = np.cumsum(depth)[:events] > 0
    marker = np.full(events, -1, dtype=np.int64)
    marker[starts] = np.arange(n_ep)
    ep = np.maximum.accumulate(marker)[in_ep]  # the latest episode started at or before the row
    heart_rate[in_ep] = np.clip(np.rint(peak[ep] + hr_noise[in_ep]), 101, 180)
    rows = np.flatnonzero(in_ep)[desat[ep]]
    spo2[rows] = np.clip(np.rint(low_spo2[ep[desat[ep]]] + spo2_noise[rows]), 88, 91)

    late = rng.random(events) < VITALS_LATE_FRACTION
    delay = np.where(late, rng.integers(1, VITALS_MAX_DISORDER_US + 1, size=events), 0)
    order = np.argsort(ts + delay, kind="stable")  # rows are in (key, reading) order: stable ties

    table = pa.Table.from_arrays(
        [_names("p", keys, key_idx[order]), _timestamps(ts[order]),
         pa.array(heart_rate[order]), pa.array(spo2[order])], schema=VITALS_SCHEMA)
    return Generated(_split(table, commits), {})


def generate_ads(keys: int, events: int, seed: int, commits: int, start_us: int) -> Generated:
    """YSB ad events over ``keys`` ads (10 ads per campaign), in event-time order."""
    rng = np.random.default_rng(seed)
    user_id = _uuids(rng, events)
    page_id = _uuids(rng, events)
    ad_id = rng.integers(0, keys, size=events)
    ad_type = rng.integers(0, len(AD_TYPES), size=events)
    event_type = rng.integers(0, len(EVENT_TYPES), size=events)
    gaps = rng.integers(ADS_EVENT_GAP_US[0], ADS_EVENT_GAP_US[1] + 1, size=events)
    event_time = start_us + np.cumsum(gaps)
    octets = pa.array([str(i) for i in range(256)], type=pa.string())
    abc = rng.integers(0, 256, size=(3, events))
    ip = pc.binary_join_element_wise("10", *(octets.take(pa.array(o)) for o in abc), ".")

    table = pa.Table.from_arrays(
        [user_id, page_id, pa.array(ad_id), _pick(AD_TYPES, ad_type),
         _pick(EVENT_TYPES, event_type), _timestamps(event_time), ip], schema=ADS_SCHEMA)
    # Ad i belongs to campaign i // 10; with fewer than 20 ads all share campaign 0.
    ads = np.arange(keys, dtype=np.int64)
    campaigns = max(1, keys // 10)
    lookup = pa.Table.from_arrays(
        [pa.array(ads), pa.array(np.minimum(ads // 10, campaigns - 1)),
         _timestamps(np.full(keys, start_us, dtype=np.int64))], schema=AD_CAMPAIGNS_SCHEMA)
    return Generated(_split(table, commits), {"ad_campaigns": lookup})


def generate_ticks(keys: int, events: int, seed: int, commits: int, start_us: int) -> Generated:
    """Per-symbol random-walk prices every second, arriving in (ts, symbol) order."""
    rng = np.random.default_rng(seed)
    key_idx, reading, first = _key_layout(keys, events)
    phase = rng.integers(0, TICKS_STEP_US, size=keys)
    ts = start_us + phase[key_idx] + reading * TICKS_STEP_US
    p0 = rng.uniform(50.0, 150.0, size=keys)
    steps = rng.normal(0.0, 0.001, size=events)
    steps[reading == 0] = 0.0
    walk = np.cumsum(steps)
    walk -= walk[first[key_idx]]  # restart the walk at each symbol's first tick
    price = np.maximum(np.round(p0[key_idx] * np.exp(walk), 2), 0.02)
    volume = rng.integers(1, 1001, size=events)
    order = np.lexsort((key_idx, ts))

    table = pa.Table.from_arrays(
        [_names("S", keys, key_idx[order]), _timestamps(ts[order]), pa.array(price[order]),
         pa.array(volume[order])], schema=TICKS_SCHEMA)
    return Generated(_split(table, commits), {})


GENERATORS: dict[str, Callable[..., Generated]] = {
    "vitals": generate_vitals,
    "ads": generate_ads,
    "ticks": generate_ticks,
}


def _parse_start(start: str) -> int:
    try:
        moment = datetime.fromisoformat(start)
    except (TypeError, ValueError) as exc:
        raise GeneratorError(f"start must be an ISO-8601 timestamp, got {start!r}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def _check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise GeneratorError(f"{name} must be an integer >= {minimum}, got {value!r}")


def generate(kind: str, *, keys: int, events: int, seed: int, commits: int = 10,
             start: str = "2026-01-01T00:00:00Z") -> Generated:
    """Generate recording ``kind`` deterministically from the arguments.

    Raises GeneratorError naming the bad argument (unknown kind listing known ones, keys<1,
    events<0, commits<1, seed<0, or a start that is not an ISO-8601 timestamp).
    """
    if kind not in GENERATORS:
        raise GeneratorError(f"kind: unknown recording kind {kind!r} "
                         f"(known: {', '.join(sorted(GENERATORS))})")
    _check_int("keys", keys, 1)
    _check_int("events", events, 0)
    _check_int("seed", seed, 0)
    _check_int("commits", commits, 1)
    return GENERATORS[kind](int(keys), int(events), int(seed), int(commits), _parse_start(start))

"""Small test catalogs and recordings written to temporary warehouses."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa

from engine.catalog import load_catalog

RECORDING = """\
name: ev
key: k
time: ts
columns: {k: string, ts: timestamp, v: int}
"""
QUERY = """\
name: ev_w
kind: window
input: ev
lateness: 3s
query:
  window: {type: tumbling, size: 5s}
  aggregates: {n: count(), n_v: count(v), s: sum(v), lo: min(v), hi: max(v), mean: avg(v)}
"""


QRE_QUERY = """\
name: ev_q
kind: qre
input: ev
lateness: 3s
output: every
query: "iter(eps(0), atom(v > 50, 1) | atom(v <= 50, 0), +)"
"""


SESSION_QUERY = """\
name: ev_s
kind: window
input: ev
lateness: 3s
query:
  window: {type: session, gap: 2s}
  aggregates: {n: count(), s: sum(v), hi: max(v)}
"""


COUNT_QUERY = """\
name: ev_c
kind: window
input: ev
lateness: 3s
query:
  window: {type: count, size: 5, every: 2}
  aggregates: {n: count(), s: sum(v), lo: min(v), mean: avg(v)}
"""


DERIVED_QUERY = """\
name: ev_d
kind: qre
input: ev
lateness: 3s
output: changes
derive:
  dv: {sql: "v - lag(v) over (partition by k order by __seq)", type: int}
query: "iter(eps(0), atom(dv < 0, 1) | atom(dv >= 0, 0), +)"
"""


UPDATES_QUERY = """\
name: ev_u
kind: window
input: ev
lateness: 3s
query:
  window: {type: sliding, size: 6s, slide: 2s}
  emit: updates
  aggregates:
    n: count()
    med: median(v)
    sd: stddev(v)
    top_k: argmax(k, v)
    kinds: count_distinct(v)
    p90: percentile(v, 0.9)
    first_v: first(v)
"""


TIME_QUERY = """\
name: ev_t
kind: qre
input: ev
lateness: 3s
output: changes
query: "iter(eps(0), atom(v >= 50, ts) | atom(v < 50, 0), max)"
"""


def small_catalog(root: Path):
    """A catalog with one recording ``ev``, a tumbling-window query ``ev_w`` and a QRE ``ev_q``."""
    (root / "recordings").mkdir(parents=True, exist_ok=True)
    (root / "queries").mkdir(parents=True, exist_ok=True)
    (root / "recordings" / "ev.yaml").write_text(RECORDING)
    (root / "queries" / "ev_w.yaml").write_text(QUERY)
    (root / "queries" / "ev_q.yaml").write_text(QRE_QUERY)
    (root / "queries" / "ev_s.yaml").write_text(SESSION_QUERY)
    (root / "queries" / "ev_c.yaml").write_text(COUNT_QUERY)
    (root / "queries" / "ev_d.yaml").write_text(DERIVED_QUERY)
    (root / "queries" / "ev_u.yaml").write_text(UPDATES_QUERY)
    (root / "queries" / "ev_t.yaml").write_text(TIME_QUERY)
    return load_catalog(root)


def events_table(rng: np.random.Generator, n: int) -> pa.Table:
    """``n`` events over 4 keys, disorder up to 6 s, a few null values, keys and times."""
    ts = (np.arange(n) * 700_000 + rng.integers(-6_000_000, 6_000_000, n)).astype("int64")
    keys = rng.choice(["a", "b", "c", "d"], n).astype(object)
    values = rng.integers(0, 100, n).astype(object)
    times = pa.array(ts + 1_700_000_000_000_000, pa.int64()).cast(
        pa.timestamp("us", tz="UTC")).to_pylist()
    if n:
        values[rng.random(n) < 0.1] = None
        keys[rng.random(n) < 0.03] = None
        for i in np.flatnonzero(rng.random(n) < 0.03):
            times[i] = None
    return pa.table({"k": pa.array(keys, pa.string()),
                     "ts": pa.array(times, pa.timestamp("us", tz="UTC")),
                     "v": pa.array(values, pa.int64())})


def write_commits(storage, path: str, table: pa.Table, commits: int) -> None:
    """Append ``table`` as ``commits`` consecutive Delta commits."""
    bounds = np.linspace(0, table.num_rows, commits + 1).astype(int)
    for a, b in itertools.pairwise(bounds):
        storage.write(table.slice(a, b - a), path, mode="append")


def vitals_only_catalog(tmp_path: Path) -> Path:
    """The sample catalog with one query (``vitals_hr_1m``), to keep a test small."""
    schemas = tmp_path / "schemas"
    shutil.copytree(Path(__file__).resolve().parents[2] / "schemas", schemas)
    for query in (schemas / "queries").glob("*.yaml"):
        if query.stem != "vitals_hr_1m":
            query.unlink()
    return schemas

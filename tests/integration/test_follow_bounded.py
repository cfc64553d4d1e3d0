"""A long ``follow`` keeps in memory nothing that grows with its segments.

``follow`` continues one run segment after segment (a commit appended after each); what the
follower keeps between segments (the replay's and the storage's caches, open handles, memos) is
measured by the size of every container they hold, and must stop growing once each segment's
tables are known. What does grow by design is on disk: ``run.json``'s files, cut points and
segments (one more of each per segment), the run's tables and their logs.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc

from jobs.recordings.store import generate_recording
from jobs.runs.follow import follow
from jobs.runs.replay import Replay
from jobs.storage import open_storage

QUERY = "vitals_hr_1m"
DAY = pa.scalar(86_400_000_000, pa.duration("us"))


def container_sizes(*holders: object) -> dict[str, int]:
    """The length of every dict, list, set and tuple the ``holders`` keep as attributes, and of
    those these hold in turn (one level down), by the path of attribute names."""
    sizes: dict[str, int] = {}

    def walk(prefix: str, value: object, depth: int) -> None:
        if isinstance(value, dict | list | set | tuple | frozenset):
            sizes[prefix] = len(value)
            if depth and isinstance(value, dict):
                for key, item in value.items():
                    walk(f"{prefix}[{key!r}]", item, depth - 1)
        elif depth and hasattr(value, "__dict__") and not callable(value):
            for name, item in vars(value).items():
                walk(f"{prefix}.{name}", item, depth - 1)

    for i, holder in enumerate(holders):
        for name, value in vars(holder).items():
            walk(f"{i}.{name}", value, 2)
    return sizes


def test_a_follow_keeps_nothing_that_grows_per_segment(spark, catalog, warehouse):
    storage = open_storage(spark)  # (its own: the session's storage holds other tests' memos)
    generate_recording(storage, warehouse, catalog, "vitals", keys=5, events=500, seed=3,
                       commits=2)
    replay = Replay(spark, storage, warehouse, catalog)
    replay.run(replay.prepare(QUERY))
    recording = warehouse.recording("vitals")
    first = storage.read_arrow(recording).slice(0, 20)
    sizes: dict[int, dict[str, int]] = {}
    total = 45

    def append(k: int) -> None:
        shifted = pc.add(first["ts"], pa.scalar((k + 1) * DAY.value, pa.duration("us")))
        storage.write(first.set_column(first.schema.get_field_index("ts"), "ts", shifted),
                      recording, mode="append")

    def log(line: str) -> None:
        if ": segment " not in line:
            return
        done = len(sizes) + 1
        sizes[done] = container_sizes(replay, storage)
        if done < total:
            append(done)

    append(0)
    report = follow(replay, QUERY, every_s=0.0, max_segments=total, log=log)
    assert report.segments == total
    warm, last = sizes[15], sizes[total]
    grown = {name: (warm.get(name), size) for name, size in last.items()
             if size > warm.get(name, 0)}
    assert not grown, f"grew from segment 15 to {total}: {grown}"
    stored = json.loads((warehouse.run_dir(report.run_id) / "run.json").read_text())
    assert len(stored["segments"]) == total + 1  # (by design: on disk, one record a segment)

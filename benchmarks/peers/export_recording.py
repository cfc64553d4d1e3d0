"""Export a recording's pinned version in arrival order for a peer system (run in the project's
venv): one Parquet file and one CSV file with the recording's columns, ``ts`` also as epoch
milliseconds (``ts_ms``) and the arrival sequence (``seq``). Uses delta-rs only (no Spark).

    python -m benchmarks.peers.export_recording ticks /tmp/peer/ticks [--version V]

``--drop-late RUN_DIR`` leaves out the events in that Reprise run's late table (per-key
watermarks, which Flink does not have), so that a peer run with a watermark delay long enough to
drop nothing sees the same events as Reprise's operator, for a one-by-one comparison.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
from deltalake import DeltaTable

from engine.catalog import load_catalog
from jobs.execution.arrival import input_index
from jobs.settings import load_settings
from jobs.storage import open_driver_storage
from jobs.warehouse import Warehouse


def export(name: str, out: Path, version: int | None = None,
           drop_late: Path | None = None) -> int:
    """Write ``out``.parquet and ``out``.csv; returns the number of events."""
    settings = load_settings()
    storage = open_driver_storage(settings=settings)
    spec = load_catalog(settings.catalog).recording(name)
    path = Warehouse.at(settings.warehouse).recording(name)
    version = storage.version(path) if version is None else version
    tables = []
    for f in map(asdict, input_index(storage, path, version)):
        table = pq.read_table(f["uri"].removeprefix("file://"), columns=list(spec.columns))
        tables.append(table.append_column("seq", pa.array(range(
            f["offset"], f["offset"] + table.num_rows), pa.int64())))
    table = pa.concat_tables(tables)
    if drop_late is not None:
        late = DeltaTable(str(drop_late / "late")).to_pyarrow_table(columns=["arrival_seq"])
        table = table.filter(pc.invert(pc.is_in(table.column("seq"), late.column(0))))
    micros = pc.cast(pc.cast(table.column(spec.time), pa.timestamp("us")), pa.int64())
    table = table.append_column("ts_ms", pc.divide(micros, 1000))
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, f"{out}.parquet")
    pcsv.write_csv(table.drop([spec.time]), f"{out}.csv",
                   pcsv.WriteOptions(include_header=False))
    return table.num_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("recording")
    parser.add_argument("out", type=Path, help="output path without extension")
    parser.add_argument("--version", type=int)
    parser.add_argument("--drop-late", type=Path, metavar="RUN_DIR",
                        help="leave out the events in this Reprise run's late table")
    args = parser.parse_args()
    rows = export(args.recording, args.out, args.version, args.drop_late)
    print(f"{rows:,} events of {args.recording} -> {args.out}.parquet, {args.out}.csv")


if __name__ == "__main__":
    main()

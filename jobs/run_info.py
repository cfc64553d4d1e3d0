"""What a run is on disk: ``run.json`` (:class:`RunInfo`), the manifest's schema, and the
fingerprint of the query definition a run was made with."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from engine.catalog import QuerySpec
from engine.errors import RepriseError
from engine.operator import KeyedOperator

from .storage import Txn
from .warehouse import Warehouse

#: A continued run's segment ``k`` commits batch ``b`` under app transaction version
#: ``k << SEGMENT_SHIFT | b`` (:meth:`RunInfo.txn`); segments record the scheme as ``txn``.
SEGMENT_SHIFT = 32
TXN_SCHEME = "segment-shifted"

MANIFEST_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("batch", pa.int64()), ("kind", pa.string()),
    ("seq_lo", pa.int64()), ("seq_hi", pa.int64()), ("rows_in", pa.int64()),
    ("rows_out", pa.int64()), ("late", pa.int64()), ("quarantined", pa.int64()),
    ("state_rows", pa.int64()), ("state_bytes", pa.int64()), ("state_version", pa.int64()),
    ("output_version", pa.int64()), ("duration_s", pa.float64()),
])


class ReplayError(RepriseError):
    """A replay cannot start or continue; the message says why and what to do."""


@dataclass
class RunInfo:
    """The persisted description of a run (``run.json``)."""

    run_id: str
    query: str
    fingerprint: str
    recording: str
    input_path: str
    input_version: int
    plan: str
    cuts: list[int]
    files: list[dict]
    buckets: int
    operator: str
    query_spec: dict = field(default_factory=dict)
    #: Pinned version of each input recording, by its name in the query's ``inputs``.
    sources: dict[str, int] = field(default_factory=dict)
    #: How events reach the bucket workers (fixed per run: the two hash keys differently).
    exchange: str = "spark"
    #: The run's segments once it has been continued (:mod:`jobs.segments`): segment 0 is the
    #: first replay, each later one a continuation to a newer recording version.
    segments: list[dict] = field(default_factory=list)

    def txn(self, table: str, batch: int) -> Txn:
        """The Delta app transaction of batch ``batch``'s commit to the run's ``table``: app id
        ``<run_id>/<table>``, version the batch id plus ``k << SEGMENT_SHIFT`` in segment ``k``
        (a continuation recommits batch ids an earlier segment used). One app id per table over
        all segments: delta-rs finds an app id a table has seen in the newest log entries, and
        looks one it never saw up in the whole log since the last checkpoint. A segment planned
        before this scheme (no ``txn`` in its record) keeps its ``<run_id>/s<k>/<table>`` ids."""
        k = len(self.segments) - 1
        if k >= 1 and self.segments[-1].get("txn") != TXN_SCHEME:
            return Txn(f"{self.run_id}/s{k}/{table}", batch)
        return Txn(f"{self.run_id}/{table}", (max(k, 0) << SEGMENT_SHIFT) + batch)

    @property
    def batches(self) -> int:
        return len(self.cuts) - 1

    @property
    def total(self) -> int:
        return self.cuts[-1]


def fingerprint(query: QuerySpec, operator: KeyedOperator) -> str:
    """Hash of what determines a run's output (query text, operator version)."""
    text = json.dumps({"query": query.raw, "op": [operator.name, operator.version]},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def read_run(warehouse: Warehouse, run_id: str) -> RunInfo:
    """Load ``run.json`` of an existing run."""
    path = warehouse.run_dir(run_id) / "run.json"
    if not path.exists():
        known = ", ".join(warehouse.runs()) or "none"
        raise ReplayError(f"no run {run_id!r} under {warehouse.root} (known runs: {known})")
    return load_run_file(path)


def load_run_file(path: Path) -> RunInfo:
    """The :class:`RunInfo` of the ``run.json`` at ``path``; a damaged file (not JSON, fields
    missing or unknown) is a :class:`ReplayError` naming it."""
    try:
        return RunInfo(**json.loads(path.read_text()))
    except (OSError, UnicodeDecodeError, ValueError, TypeError) as exc:
        raise ReplayError(f"{path}: not a readable run description ({exc}); remove the run's "
                          "directory to replay it afresh") from exc

"""What the workers of one Spark job of a run get (:class:`StepPlan`, pickled into their
tasks) and what the driver learns back of one batch (:class:`StepFiles`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from engine.operator import KeyedOperator
from jobs.execution.derived_columns import WorkerDerive
from jobs.storage import StagedFile

#: Tables a step writes; each worker also reports an ``input`` row (rows it saw).
KINDS = ("output", "late", "quarantine", "state")


@dataclass(frozen=True)
class StepPlan:
    """Everything a worker needs to run one batch (pickled into the UDF)."""

    op: KeyedOperator
    batches: tuple[tuple[int, int, int], ...]  # (batch id, first seq, end seq), in order
    dirs: dict[str, str]  # kind -> the staging directory of its Parquet files (all batches)
    schemas: dict[str, pa.Schema]  # kind -> Arrow schema of its table
    recording_columns: tuple[str, ...]
    time_column: str
    # bucket -> its state files (a file of every bucket is in each bucket's list)
    state_files: dict[int, list[str]] = field(default_factory=dict)
    buckets: int = 1  # the run's buckets
    modulo_buckets: bool = False  # a run made before hash ranges (see jobs.execution.bucketing)
    finish: bool = False  # the last of ``batches`` is the end-of-input flush
    kernel_dir: str | None = None  # QRE kernel cache of the workers (``REPRISE_KERNEL_DIR``)
    derive: WorkerDerive | None = None  # derived columns computed by the workers (direct)
    # late/quarantine -> the last batch whose events of that kind the table holds already (an
    # earlier attempt committed them): the workers count those batches' events, write none
    events_done: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class StepFiles:
    """What the workers of one batch wrote, and which buckets they stepped. The late and
    quarantined events of a job's batches are written together, as files of its last stepped
    batch; ``events`` counts each batch's own (``late``, ``quarantine``)."""

    staged: dict[str, list[StagedFile]]
    buckets: set[int]
    rows_seen: int
    events: dict[str, int]
    bytes_read: int = 0  # input bytes the direct exchange's tasks read (counted on the first)

"""What ``reprise diff`` reports: counts per table and kind, the first diverging batch, the
columns only one side has, changed rows per column and the first differences; as JSON too."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from jobs.diff.sides import Side
from jobs.diff.tables import TABLES, TableDiff


@dataclass
class DiffReport:
    """Two runs compared."""

    a: Side
    b: Side
    tables: dict[str, TableDiff]
    first_diverging_batch: int | None
    notes: list[str] = field(default_factory=list)
    #: Where ``--output`` wrote the differences (table -> path).
    written: list[str] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not any(t.counts.different for t in self.tables.values())

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data (``equal``, per table ``only_a``, ``only_b``,
        ``changed``, ... and ``first_diverging_batch``)."""
        doc: dict[str, Any] = {"equal": self.equal}
        for name, side in (("a", self.a), ("b", self.b)):
            doc[name] = {"given": side.given, "run_id": side.info.run_id,
                         "query": side.info.query, "reads": side.reads,
                         "plan": side.info.plan}
        for name in TABLES:
            t = self.tables[name]
            c = t.counts
            doc[name] = {"only_a": c.only_a, "only_b": c.only_b, "changed": c.changed,
                         "equal": c.equal, "moved": c.moved,
                         "changed_columns": dict(sorted(c.changed_columns.items())),
                         "identity": t.layout.keys,
                         "columns_only_in_a": list(t.layout.only_in_a),
                         "columns_only_in_b": list(t.layout.only_in_b),
                         "first_batch": t.first_batch,
                         "differences": records(t.shown)}
        doc["first_diverging_batch"] = self.first_diverging_batch
        doc["notes"] = list(self.notes)
        doc["written"] = list(self.written)
        return doc


def plain(value: Any) -> Any:
    """``value`` as JSON data (None for a null, ISO text for a time, lists for arrays)."""
    if isinstance(value, np.ndarray | list | tuple):
        return [plain(v) for v in value]
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return value


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``frame`` as JSON data."""
    return [{c: plain(v) for c, v in row.items()}
            for row in frame.astype(object).to_dict("records")]

"""The derived columns of a shared job's clusters, computed in the part's task once per cluster,
definition and group of batches (the plan's ``derived`` listing:
:func:`engine.sharing.derived.shared_columns`).

Constant columns (the key of ``key: none``, a literal) are added to the input rows as they are
read, before the key buckets; the others are computed by the workers' evaluator
(:mod:`jobs.execution.derived_columns`), one program per partition column of their window
functions, over every event of the range (before the cluster's W: a derived column sees the
events a standalone run's does), stepped first over the events before the range when a window
function needs them. A definition that several members name alike is one column; named apart,
it is computed once and copied under its other stream names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from engine.derive import Unsupported, compile_derived, constant_value
from engine.errors import RepriseError
from engine.sharing.derived import SharedColumn
from jobs.execution.derived_columns import WorkerDerive, with_constants


@dataclass(frozen=True, eq=False)
class ClusterDerive:
    """The derived columns of one cluster's stream (see the module docstring)."""

    constants: Mapping[str, tuple[object, str]]  # stream name -> (value, catalog type)
    programs: tuple[WorkerDerive, ...]  # each column under the first of its stream names
    aliases: Mapping[str, str]  # another stream name -> the computed column

    @property
    def computed(self) -> int:
        """The columns computed per group of batches (a definition once; constants are added
        as the events are read)."""
        return sum(len(p.program.columns) for p in self.programs)

    @property
    def streams(self) -> frozenset[str]:
        """The stream names of the computed columns."""
        return frozenset(name for p in self.programs for name, _, _ in p.program.columns
                         ) | frozenset(self.aliases)

    def add_constants(self, table: pa.Table) -> pa.Table:
        """The input ``table`` with the constant columns (text dictionary-encoded: the constant
        key of ``key: none`` is then coded, tested for nulls and bucketed as cheaply as a key
        column read dictionary-encoded)."""
        return with_constants(table, {n: c for n, c in self.constants.items()
                                      if n not in table.column_names}, dictionary=True)

    def add_to(self, frame: pd.DataFrame, lo: int) -> pd.DataFrame:
        """``frame`` (every event of the range from arrival ``lo``, in arrival order) with the
        computed columns."""
        for program in self.programs:
            frame = program.add_to(frame, lo, lambda table: np.ones(table.num_rows, bool))
        for alias, column in self.aliases.items():
            frame[alias] = frame[column]
        return frame


def cluster_derive(columns: Sequence[SharedColumn], recording: Mapping[str, str],
                   files: list[dict]) -> ClusterDerive | None:
    """How a cluster computes its derived ``columns`` (None without any) over the recording's
    columns (name -> catalog type) and its input ``files`` from the first event on."""
    if not columns:
        return None
    constants: dict[str, tuple[object, str]] = {}
    by_partition: dict[str, dict[str, tuple[str, str]]] = {}
    aliases = {}
    for c in columns:
        if (value := constant_value(c.sql, c.type)) is not None:
            constants.update(dict.fromkeys(c.streams, value))
            continue
        first, *others = c.streams
        by_partition.setdefault(c.partition or "", {})[first] = (c.sql, c.type)
        aliases.update(dict.fromkeys(others, first))
    programs = []
    for partition, derived in sorted(by_partition.items()):
        try:
            program = compile_derived(derived, recording, partition)
        except Unsupported as exc:
            raise RepriseError(f"a shared derived column needs Spark SQL: {exc}") from None
        programs.append(WorkerDerive(program, tuple(files)))
    return ClusterDerive(constants, tuple(programs), aliases)

"""Where things live: the warehouse layout (one place, used by every job), on a local directory
or an object store (:mod:`jobs.warehouse_uri`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from jobs.storage.locations import exists, names
from jobs.warehouse_names import check_name, inside
from jobs.warehouse_uri import WarehouseError, parse_warehouse

__all__ = ["Warehouse", "WarehouseError"]


@dataclass(frozen=True)
class Warehouse:
    """``recordings/<name>``, ``quarantine/<name>``, ``runs/<run_id>/{output,late,...}`` under
    ``root``: a local directory, or the URI (``s3://bucket/prefix``) of an object-store one."""

    root: Path | str
    #: Run directories checked already, by run id (the check resolves the path: a few stat
    #: calls per component; a replay asks for its tables' paths dozens of times).
    _run_dirs: dict[str, Path] = field(init=False, default_factory=dict, compare=False,
                                       repr=False)

    @classmethod
    def at(cls, root: str | Path) -> Warehouse:
        """The warehouse ``root`` names (a local path made absolute, ``file://`` or ``s3://``;
        :func:`~jobs.warehouse_uri.parse_warehouse`); a local path holding a percent escape such
        as ``%41`` is refused: delta-rs decodes it (``wh%41`` would be ``whA``)."""
        uri = parse_warehouse(root)
        if uri.remote:
            return cls(str(uri))
        path = uri.path
        escape = re.search(r"%[0-9A-Fa-f]{2}", str(path))
        if escape:
            raise WarehouseError(f"warehouse {path}: delta-rs reads {escape.group()!r} in a path "
                                 "as an escaped character; use a directory without '%' followed "
                                 "by two hexadecimal digits (--warehouse, REPRISE_WAREHOUSE)")
        return cls(path)

    @property
    def remote(self) -> bool:
        """Whether the warehouse is on an object store (``root`` is its URI)."""
        return isinstance(self.root, str)

    def _under(self, what: str, name: str, *parts: str) -> str:
        """``root/parts.../name`` (``name`` checked) as a local path or a URI."""
        if self.remote:
            return "/".join((str(self.root), *parts, check_name(what, name)))
        return str(inside(Path(self.root), what, name, *parts))

    def recording(self, name: str) -> str:
        return self._under("recording name", name, "recordings")

    def quarantine(self, name: str) -> str:
        """Rows of ``reprise record`` that did not fit the recording's schema."""
        return self._under("recording name", name, "quarantine")

    def check_runs(self) -> None:
        """WarehouseError when runs cannot live here: replays on an object-store warehouse are
        not built yet (its recordings are)."""
        if self.remote:
            raise WarehouseError(f"warehouse {self.root}: runs on an object-store warehouse are "
                                 "not supported yet (generate, record, optimize and runs are); "
                                 "use a local warehouse directory for replays")

    def run_dir(self, run_id: str) -> Path:
        """A run's local directory (see :meth:`check_runs`)."""
        self.check_runs()
        known = self._run_dirs.get(run_id)
        if known is None:
            self._run_dirs[run_id] = known = inside(Path(self.root), "run id", run_id, "runs")
        return known

    def run_table(self, run_id: str, table: str) -> str:
        """``output``, ``late``, ``quarantine``, ``state`` or ``manifest`` of a run."""
        if self.remote:
            return f"{self._under('run id', run_id, 'runs')}/{table}"
        return str(self.run_dir(run_id) / table)

    def runs(self) -> list[str]:
        """The ids of the runs under ``runs/`` (those with a ``run.json``)."""
        base = f"{self.root}/runs"
        return sorted(n for n in names(base) if exists(f"{base}/{n}/run.json"))

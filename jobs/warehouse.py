"""Where things live: the warehouse layout (one place, used by every job), on a local directory
or an object store (:mod:`jobs.warehouse_uri`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from jobs.storage.locations import exists, names
from jobs.storage.object_paths import AnyPath, ObjectPath
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
    _run_dirs: dict[str, AnyPath] = field(init=False, default_factory=dict, compare=False,
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

    def run_dir(self, run_id: str) -> AnyPath:
        """A run's directory: a local one, or the prefix of its objects
        (:class:`~jobs.storage.object_paths.ObjectPath`) on an object store."""
        known = self._run_dirs.get(run_id)
        if known is None:
            known = (ObjectPath(self._under("run id", run_id, "runs")) if self.remote
                     else inside(Path(self.root), "run id", run_id, "runs"))
            self._run_dirs[run_id] = known
        return known

    def run_table(self, run_id: str, table: str) -> str:
        """``output``, ``late``, ``quarantine``, ``state`` or ``manifest`` of a run."""
        return str(self.run_dir(run_id) / table)

    def runs(self) -> list[str]:
        """The ids of the runs under ``runs/`` (those with a ``run.json``)."""
        base = f"{self.root}/runs"
        return sorted(n for n in names(base) if exists(f"{base}/{n}/run.json"))

"""Where things live: the warehouse directory layout (one place, used by every job)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from engine.errors import RepriseError
from jobs.warehouse_names import inside


class WarehouseError(RepriseError):
    """A warehouse directory that the Delta libraries cannot use."""


@dataclass(frozen=True)
class Warehouse:
    """``recordings/<name>``, ``quarantine/<name>``, ``runs/<run_id>/{output,late,...}``."""

    root: Path
    #: Run directories checked already, by run id (the check resolves the path: a few stat
    #: calls per component; a replay asks for its tables' paths dozens of times).
    _run_dirs: dict[str, Path] = field(init=False, default_factory=dict, compare=False,
                                       repr=False)

    @classmethod
    def at(cls, root: str | Path) -> Warehouse:
        """The warehouse at ``root`` (made absolute); a path holding a percent escape such as
        ``%41`` is refused: delta-rs decodes it (``wh%41`` would be ``whA``)."""
        path = Path(root).resolve()
        escape = re.search(r"%[0-9A-Fa-f]{2}", str(path))
        if escape:
            raise WarehouseError(f"warehouse {path}: delta-rs reads {escape.group()!r} in a path "
                                 "as an escaped character; use a directory without '%' followed "
                                 "by two hexadecimal digits (--warehouse, REPRISE_WAREHOUSE)")
        return cls(path)

    def recording(self, name: str) -> str:
        return str(inside(self.root, "recording name", name, "recordings"))

    def quarantine(self, name: str) -> str:
        """Rows of ``reprise record`` that did not fit the recording's schema."""
        return str(inside(self.root, "recording name", name, "quarantine"))

    def run_dir(self, run_id: str) -> Path:
        known = self._run_dirs.get(run_id)
        if known is None:
            self._run_dirs[run_id] = known = inside(self.root, "run id", run_id, "runs")
        return known

    def run_table(self, run_id: str, table: str) -> str:
        """``output``, ``late``, ``quarantine``, ``state`` or ``manifest`` of a run."""
        return str(self.run_dir(run_id) / table)

    def runs(self) -> list[str]:
        base = self.root / "runs"
        return sorted(p.name for p in base.iterdir() if (p / "run.json").exists()) \
            if base.exists() else []

"""Delta's own vacuum of a table's old versions (the tables are plain Delta tables whichever
backend wrote them, so delta-rs does it for both)."""

from __future__ import annotations

from deltalake import DeltaTable


def vacuum(path: str, keep_versions: list[int] | None = None) -> list[str]:
    """Delete the data files that neither the latest version of the table at ``path`` nor the
    versions ``keep_versions`` use, at once (retention 0); returns the deleted files. Time travel
    to other versions is gone afterwards: call it only on tables no one reads at old versions."""
    table = DeltaTable(path.removeprefix("file://"))
    return table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False,
                        keep_versions=keep_versions or None)

"""The options several ``reprise`` commands share: warehouse, catalog and Delta backend."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# Help texts are rich markup: "[env ...]" would be taken for a tag and vanish, hence "(env ...)".


def directory(text: str) -> Path:
    """A directory option's path; an empty one is refused (it would mean the current
    directory)."""
    if not text.strip():
        raise typer.BadParameter("empty path")
    return Path(text)


Warehouse_ = Annotated[Path | None, typer.Option(
    "--warehouse", parser=directory,
    help="Warehouse directory (env REPRISE_WAREHOUSE, default ./warehouse)")]
Catalog_ = Annotated[Path | None, typer.Option(
    "--catalog", parser=directory,
    help="Catalog directory (env REPRISE_CATALOG, default the current directory's reprise.yaml or "
    "schemas/, else the sample catalog)")]
Backend_ = Annotated[str | None, typer.Option(
    "--backend", help="Delta backend: auto | delta-rs | delta-spark (env REPRISE_DELTA_BACKEND, "
    "default auto)")]

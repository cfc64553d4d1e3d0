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


def location(text: str) -> str:
    """A warehouse option's directory or URI (checked by the command); an empty one is
    refused."""
    if not text.strip():
        raise typer.BadParameter("empty path")
    return text


Warehouse_ = Annotated[str | None, typer.Option(
    "--warehouse", parser=location,
    help="Warehouse directory or s3://BUCKET/PREFIX (env REPRISE_WAREHOUSE, default "
    "./warehouse)")]
Catalog_ = Annotated[Path | None, typer.Option(
    "--catalog", parser=directory,
    help="Catalog directory (env REPRISE_CATALOG, default the current directory's reprise.yaml or "
    "schemas/, else the sample catalog)")]
Backend_ = Annotated[str | None, typer.Option(
    "--backend", help="Delta backend: auto | delta-rs | delta-spark (env REPRISE_DELTA_BACKEND, "
    "default auto)")]

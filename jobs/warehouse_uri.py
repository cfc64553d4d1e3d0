"""The warehouse setting (``REPRISE_WAREHOUSE``, ``--warehouse``) read as a URI: a local
directory (a path or ``file://``) or an object-store location (``s3://bucket/prefix``).

Anything else is refused here, before Spark starts, with the problem and the URI (its user
information, where it has any, left out: it may be a secret).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from engine.errors import RepriseError

#: Schemes of object stores the warehouse may be on.
OBJECT_STORE_SCHEMES = ("s3",)
#: How a URI starts: a scheme followed by ``//`` (``dir:name`` is a local path).
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
#: A bucket name S3 accepts (3 to 63 lower-case letters, digits, dots and hyphens, starting and
#: ending with a letter or digit).
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
#: Schemes people write for stores this build does not reach, and what to write instead.
_OTHER_STORES = {"s3a": "s3://", "s3n": "s3://"}


class WarehouseError(RepriseError):
    """A warehouse setting that names no usable location; the message names it and the
    problem."""


@dataclass(frozen=True)
class WarehouseUri:
    """Where the warehouse is: ``scheme`` ``file`` (``path`` absolute) or an object store
    (``bucket`` and the key ``prefix`` under it, without slashes at either end)."""

    scheme: str
    path: Path | None = None
    bucket: str = ""
    prefix: str = ""

    @property
    def remote(self) -> bool:
        """Whether the warehouse is on an object store."""
        return self.scheme != "file"

    def __str__(self) -> str:
        if not self.remote:
            return str(self.path)
        return f"{self.scheme}://{self.bucket}" + (f"/{self.prefix}" if self.prefix else "")


def shown(text: str) -> str:
    """``text`` as an error may show it: a URI's user information (``user:secret@``) left
    out."""
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@", r"\1***@", text)


def parse_warehouse(text: str | Path) -> WarehouseUri:
    """The warehouse ``text`` names (a relative path is made absolute); WarehouseError naming
    it and the problem when it names no location this build can use."""
    if isinstance(text, Path):
        return WarehouseUri("file", path=text.resolve())
    given = text.strip()
    if not given:
        raise WarehouseError("warehouse: empty (--warehouse, REPRISE_WAREHOUSE)")
    match = _URI.match(given)
    if match is None:
        return WarehouseUri("file", path=Path(given).expanduser().resolve())
    scheme = match.group(1).lower()
    parts = urlsplit(given)

    def refuse(problem: str) -> WarehouseError:
        return WarehouseError(f"warehouse {shown(given)}: {problem}")

    if parts.query or parts.fragment:
        raise refuse("a warehouse URI takes no query ('?') or fragment ('#')")
    if "@" in parts.netloc:
        raise refuse("credentials do not belong in the URI; set AWS_ACCESS_KEY_ID and "
                     "AWS_SECRET_ACCESS_KEY instead")
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise refuse(f"a file:// URI names a local directory, not one on host "
                         f"{parts.netloc!r}")
        if not parts.path:
            raise refuse("no directory after file://")
        return WarehouseUri("file", path=Path(parts.path).resolve())
    if scheme not in OBJECT_STORE_SCHEMES:
        instead = _OTHER_STORES.get(scheme)
        hint = f"; write {instead}" if instead else ""
        raise refuse(f"scheme {scheme}:// is not supported (a warehouse is a local directory, "
                     f"file://DIR or s3://BUCKET/PREFIX){hint}")
    bucket = parts.netloc
    if not bucket:
        raise refuse("no bucket: expected s3://BUCKET/PREFIX")
    if not _BUCKET.fullmatch(bucket) or ".." in bucket:
        raise refuse(f"{bucket!r} is not a valid bucket name (3 to 63 lower-case letters, "
                     "digits, dots and hyphens)")
    prefix = parts.path.strip("/")
    if any(part in ("", ".", "..") for part in prefix.split("/")) and prefix:
        raise refuse(f"the key prefix {prefix!r} has an empty, '.' or '..' component")
    return WarehouseUri(scheme, bucket=bucket, prefix=prefix)

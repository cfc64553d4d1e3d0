"""The Delta Lake jars for the pinned Spark line, fetched once from Maven Central and cached.

The delta-spark backend needs Delta's Spark connector on the JVM's classpath; PyPI's
``delta-spark`` package carries only its Python API. :func:`project_jars` returns the pinned
jars from a directory inside the Python environment (``<sys.prefix>/delta-jars/<version>``),
fetching them on first use with the Ivy resolver that pyspark ships (Ivy checks Maven Central's
SHA-1 of each file; every jar is then checked against the SHA-256 pinned here). The set is
``delta-spark`` and the runtime dependencies of it that pyspark does not ship already.
``python -m jobs.runtime.delta_jars`` fetches them (``make test`` and ``make demo`` do).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from xml.sax.saxutils import quoteattr

import pyspark

from engine.errors import RepriseError

#: The Delta Lake release whose connector is used; PyPI's ``delta-spark`` is pinned to it too.
DELTA_VERSION = "4.4.0"
#: Delta's artifacts carry the Spark line they are built for (``delta-spark_4.1_2.13``).
SPARK_LINE = ".".join(pyspark.__version__.split(".")[:2])
CONNECTOR = f"io.delta:delta-spark_{SPARK_LINE}_2.13:{DELTA_VERSION}"

#: (group, artifact, version) -> SHA-256 of the jar, for Spark 4.1 and Delta 4.4.0.
PINNED: dict[tuple[str, str, str], str] = {
    ("io.delta", "delta-spark_4.1_2.13", DELTA_VERSION):
        "75a9400986853c061f5109f012547de2545a5759e5e752e5ef633dabe16a4f10",
    ("io.delta", "delta-storage", DELTA_VERSION):
        "c46735481fa8e326b0957be02b4420cbcab4b325bb08009b7f2045a95133f1cc",
    ("io.delta", "delta-kernel-api", DELTA_VERSION):
        "ee9b5a14ac3b7efdff4d61a58478fe8eb0e5a3fbca43889dca7290795fe79a11",
    ("io.delta", "delta-kernel-defaults", DELTA_VERSION):
        "225c975199e4718b38ee5b7e6da7f19e9585024262b2cec2656b32151a856b0b",
    ("io.delta", "delta-kernel-unitycatalog", DELTA_VERSION):
        "cea22dfb4ac562b3cd27bf652697750e8336009d73fb06631363aaaad5345ffa",
    ("io.unitycatalog", "unitycatalog-client", "0.6.0"):
        "48257499a86b801a3e2372cec55ac226ca1c1c7eabe5c118e7302f29a1fdbc19",
    ("io.unitycatalog", "unitycatalog-hadoop", "0.6.0"):
        "c47b63c961c87102b9e1d63809a0915ba4c86b7652f57c8d39ca3a05b441a150",
    ("com.fasterxml.jackson.datatype", "jackson-datatype-jdk8", "2.13.5"):
        "e58761751fea8a00dc626aae1c5f1be38c5cfd487aeb333d933a4ab5f5a73c55",
    ("commons-logging", "commons-logging", "1.3.0"):
        "66d3c980470b99b0c511dad3dfc0ae7b265ec1fb144e96bc0253a8a175fd34d9",
    ("javax.annotation", "javax.annotation-api", "1.3.2"):
        "e04ba5195bcd555dc95650f7cc614d151e4bcd52d29a10b8aa2197f3ab89ab9b",
    ("org.roaringbitmap", "shims", "0.9.25"):
        "0b82ed6cb1caf0706304b42358d568eb6faf190eadea7f2b2d365cb63156b40d",
}

#: How long the download may take (about 13 MB).
FETCH_SECONDS = 600


class DeltaJarsError(RepriseError):
    """The Delta jars are not in the cache and cannot be fetched; the message says why."""


def jar_directory() -> Path:
    """Where the pinned jars are cached: inside the Python environment (``.venv``)."""
    return Path(sys.prefix) / "delta-jars" / f"delta-{DELTA_VERSION}-spark-{SPARK_LINE}"


def _name(group: str, artifact: str, version: str) -> str:
    return f"{group}_{artifact}-{version}.jar"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cached_jars(directory: Path | None = None) -> list[Path] | None:
    """The pinned jars in ``directory`` (default :func:`jar_directory`) in a fixed order, or
    None when one is missing (a cache that is there was checked when it was filled)."""
    directory = jar_directory() if directory is None else directory
    paths = [directory / _name(*coordinates) for coordinates in PINNED]
    return paths if all(p.is_file() for p in paths) else None


def _ivy_file() -> str:
    """An Ivy module asking for exactly the pinned jars (no transitive dependencies)."""
    lines = [f"    <dependency org={quoteattr(g)} name={quoteattr(a)} rev={quoteattr(v)} "
             'transitive="false" conf="default->master"/>' for g, a, v in PINNED]
    return ('<ivy-module version="2.0">\n  <info organisation="reprise" module="delta-jars"/>\n'
            "  <dependencies>\n" + "\n".join(lines) + "\n  </dependencies>\n</ivy-module>\n")


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else "java"


def _ivy_jar() -> Path:
    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("ivy-*.jar"))
    if not jars:
        raise DeltaJarsError("cannot fetch the Delta jars: pyspark ships no Ivy jar "
                             f"(looked in {Path(pyspark.__file__).parent / 'jars'})")
    return jars[-1]


def _last_problem(output: str) -> str:
    """The line of Ivy's output that says what went wrong (its last 'not found' or error)."""
    lines = [line.strip(" :\t") for line in output.splitlines() if line.strip(" :\t")]
    for line in reversed(lines):
        if "not found" in line or "UNRESOLVED" in line or "ERROR" in line or "error" in line:
            return line
    return lines[-1] if lines else "no output"


def fetch_jars(directory: Path | None = None) -> list[Path]:
    """Fetch the pinned jars into ``directory`` (default :func:`jar_directory`) from Maven
    Central; the directory appears whole or not at all. DeltaJarsError when the download or a
    checksum fails."""
    directory = jar_directory() if directory is None else directory
    directory.parent.mkdir(parents=True, exist_ok=True)
    failed = f"cannot fetch the Delta jars ({CONNECTOR}) from Maven Central into {directory}"
    with tempfile.TemporaryDirectory(dir=directory.parent, prefix=".fetch-") as scratch:
        work = Path(scratch)
        (work / "ivy.xml").write_text(_ivy_file())
        command = [_java(), "-jar", str(_ivy_jar()), "-ivy", str(work / "ivy.xml"),
                   "-confs", "default", "-cache", str(work / "cache"),
                   "-retrieve", str(work / "jars" / "[organisation]_[artifact]-[revision].[ext]")]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=FETCH_SECONDS,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DeltaJarsError(f"{failed}: {exc}") from exc
        output = done.stdout + done.stderr
        if done.returncode != 0 or "UNRESOLVED DEPENDENCIES" in output:  # (Ivy exits 0 then)
            raise DeltaJarsError(f"{failed}: {_last_problem(output)}")
        for coordinates, expected in PINNED.items():
            jar = work / "jars" / _name(*coordinates)
            if not jar.is_file():
                raise DeltaJarsError(f"{failed}: {':'.join(coordinates)} was not retrieved")
            if _digest(jar) != expected:
                raise DeltaJarsError(f"{failed}: {jar.name} does not have the pinned SHA-256")
        if directory.exists():  # (another process filled it meanwhile)
            shutil.rmtree(work / "jars")
        else:
            (work / "jars").rename(directory)
    jars = cached_jars(directory)
    if jars is None:
        raise DeltaJarsError(f"{failed}: the cache directory is incomplete; delete it and retry")
    return jars


def project_jars() -> list[Path]:
    """The pinned Delta jars, fetched into the cache on first use."""
    return cached_jars() or fetch_jars()


def main() -> int:
    """Fetch the jars when they are not cached (``make jars``); one line on failure."""
    try:
        jars = project_jars()
    except DeltaJarsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"Delta jars ({CONNECTOR}, {len(jars)} files) in {jars[0].parent}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

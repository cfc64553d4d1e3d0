"""Benchmark results as data: each benchmark writes ``benchmarks/results/<name>.json``.

A result holds what was run (``command``, ``data_size``), what was measured (``medians``, in
seconds unless the name of the figure says otherwise, and the headline ``ratio``), what it is
measured against (``target``), and where: ``commit`` (the checkout's HEAD, or null outside a
git checkout), ``machine`` (cores, memory, Python and Java versions) and ``load`` (the 1-minute
load average before and after the benchmark).

``load.before`` is the load average when this module was first imported, which for a
benchmark run as ``python -m benchmarks.<name>`` is before any work starts (the benchmarks
import this module at the top); pass ``load_before`` to :func:`record` to use a reading of
your own. ``REPRISE_BENCH_RESULTS`` names another directory to write to (a scratch run, or a
benchmark started by another one, such as ``benchmarks.cluster``'s tumbling runs).
``python -m benchmarks.report`` turns the files into ``docs/benchmarks.md``.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: the environment variable naming another directory for the results
RESULTS_ENV = "REPRISE_BENCH_RESULTS"
LOAD_AT_IMPORT = os.getloadavg()[0]


def results_dir() -> Path:
    """Where results are written: ``$REPRISE_BENCH_RESULTS`` or ``benchmarks/results``."""
    override = os.environ.get(RESULTS_ENV)
    return Path(override) if override else RESULTS


def command_line() -> str:
    """This process's command as ``python -m benchmarks.<name> <arguments>``."""
    script = Path(sys.argv[0]).resolve()
    try:
        module = ".".join(script.relative_to(ROOT).with_suffix("").parts)
    except ValueError:
        return shlex.join(["python", *sys.argv])
    return shlex.join(["python", "-m", module, *sys.argv[1:]])


def git_commit(root: Path = ROOT) -> str | None:
    """The short hash of HEAD in ``root``, or None outside a git checkout."""
    if shutil.which("git") is None:
        return None
    done = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def java_version() -> str | None:
    """The version the ``java`` of ``JAVA_HOME`` (else of PATH) reports, or None."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        return None
    done = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    found = re.search(r'version "([^"]+)"', done.stderr + done.stdout)
    return found.group(1) if found else None


def machine() -> dict:
    """Cores, memory (GiB), Python and Java versions of this machine."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"cores": os.cpu_count(), "memory_gib": round(memory / 2**30, 1),
            "python": platform.python_version(), "java": java_version(),
            "system": f"{platform.system()} {platform.machine()}"}


def record(name: str, *, command: str, data_size: dict, medians: dict[str, float],
           ratio: float | None = None, target: str | None = None, extra: dict | None = None,
           load_before: float | None = None) -> Path:
    """Write the result of benchmark ``name`` to ``<results dir>/<name>.json``; its path.

    ``medians`` maps each measured figure to its median; ``ratio`` is the figure ``target``
    (a sentence such as ``"ratio <= 2"``) is about; ``extra`` holds any other figures."""
    load_after = os.getloadavg()[0]
    result = {
        "name": name, "command": command, "data_size": data_size,
        "medians": {key: float(value) for key, value in medians.items()},
        "ratio": None if ratio is None else float(ratio), "target": target,
        "extra": extra or {}, "commit": git_commit(), "machine": machine(),
        "load": {"before": round(LOAD_AT_IMPORT if load_before is None else load_before, 2),
                 "after": round(load_after, 2)},
    }
    directory = results_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    path.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
    return path


def load(directory: Path | None = None) -> dict[str, dict]:
    """Every result in ``directory`` (default: the results dir) by benchmark name."""
    directory = directory or results_dir()
    if not directory.is_dir():
        return {}
    return {path.stem: json.loads(path.read_text()) for path in sorted(directory.glob("*.json"))}

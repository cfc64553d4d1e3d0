"""Benchmark results as data: ``benchmarks/results/<name>.json`` (a minimal writer; the full one,
with the same signature, comes with the docs)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
LOAD_AT_IMPORT = os.getloadavg()[0]


def record(name: str, *, command: str, data_size: dict, medians: dict[str, float],
           ratio: float | None = None, target: str | None = None, extra: dict | None = None
           ) -> Path:
    """Write the result of benchmark ``name`` to ``benchmarks/results/<name>.json``; its path."""
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    result = {
        "name": name, "command": command, "data_size": data_size,
        "medians": {key: float(value) for key, value in medians.items()},
        "ratio": None if ratio is None else float(ratio), "target": target,
        "extra": extra or {}, "commit": done.stdout.strip() or None,
        "machine": {"cores": os.cpu_count(), "memory_gib": round(memory / 2**30, 1),
                    "python": platform.python_version(), "java": None},
        "load": {"before": round(LOAD_AT_IMPORT, 2), "after": round(os.getloadavg()[0], 2)},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    return path

"""Kill ``reprise record`` with SIGKILL at every commit boundary and at random instants.

The campaign (20 kills unless told otherwise), one line per run::

    PYTHONPATH=. python tests/support/record_kills.py [--kills 20] [--seed 1] [--dir DIR]
        [--backend delta-rs|delta-spark]

After every run, killed or not, the recording and its quarantine (as
``jobs.recordings.commits.quarantine_rows`` reads it) either both hold a round's rows or both
lack them, and the rounds recorded before are there exactly once; the run that is not killed
completes the round, exactly once. ``test_record_crash.py`` runs a smaller campaign.

The harness, run by the campaign in a subprocess::

    python tests/support/record_kills.py run --kill (cK | mMS | wMS) -- ARGS...

runs ``reprise ARGS`` and SIGKILLs itself after its K-th Delta commit (K = 0: as the first one
starts), MS milliseconds after ``record_files`` starts, or MS milliseconds after its first commit
starts. The fault hook is set here, in the harness process, by wrapping the storage's commit
methods; the commit path never looks for it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
NAME = "vitals"
TOOK = "harness durations: "  # stderr line of an uninterrupted run: JSON seconds


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _kill_in(ms: float) -> None:
    timer = threading.Timer(ms / 1000, _die)
    timer.daemon = True
    timer.start()


def kill_on_commits(kill: str | None) -> dict[str, float]:
    """Wrap the storage backends' commit methods in this process: ``cK`` kills after the K-th
    commit (K = 0: as the first one starts), ``wMS`` MS ms after the first commit starts (other
    kinds: no kill). Returns the counters, filled as commits go: ``commits``, ``first`` (when
    the first started) and ``last`` (when the last ended), in ``time.perf_counter`` seconds."""
    from jobs.storage.delta_rs import DeltaRsStorage
    from jobs.storage.delta_spark import DeltaSparkStorage

    mode, amount = (kill[0], float(kill[1:])) if kill else ("", 0.0)
    seen = {"commits": 0, "first": 0.0, "last": 0.0}
    inside = threading.local()

    def counted(method: Callable) -> Callable:
        def commit(self, *args, **kwargs):
            if getattr(inside, "commit", False):  # (delta-spark's write commits its files)
                return method(self, *args, **kwargs)
            inside.commit = True
            try:
                return outermost(self, *args, **kwargs)
            finally:
                inside.commit = False

        def outermost(self, *args, **kwargs):
            if not seen["first"]:
                seen["first"] = time.perf_counter()
                if mode == "w":
                    _kill_in(amount)
            if mode == "c" and amount == 0:
                _die()
            result = method(self, *args, **kwargs)
            seen["commits"] += 1
            seen["last"] = time.perf_counter()
            if mode == "c" and seen["commits"] == amount:
                _die()
            return result
        return commit

    for backend in (DeltaRsStorage, DeltaSparkStorage):
        backend.write = counted(backend.write)
        backend.commit_files = counted(backend.commit_files)
    return seen


def _arm(kill: str | None) -> None:
    """Install the fault hook in this process (the harness): ``cK`` kills after the K-th
    commit (K = 0: as the first one starts), ``mMS`` MS ms after ``record_files`` starts,
    ``wMS`` MS ms after the first commit starts; an uninterrupted run reports its durations on
    stderr."""
    import jobs.recordings.store as store

    seen = kill_on_commits(kill)
    real = store.record_files

    def timed(*args, **kwargs):
        if kill and kill[0] == "m":
            _kill_in(float(kill[1:]))
        start = time.perf_counter()
        result = real(*args, **kwargs)
        end = time.perf_counter()
        print(TOOK + json.dumps({"record": end - start,
                                 "writing": end - seen["first"] if seen["first"] else 0.0}),
              file=sys.stderr, flush=True)
        return result

    store.record_files = timed


def harness(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="record_kills.py run")
    parser.add_argument("--kill", help="cK, mMS or wMS (see _arm)")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    _arm(ns.kill)
    from jobs.cli.app import app

    app([a for a in ns.args if a != "--"], prog_name="reprise")


# ---------------------------------------------------------------- the campaign

@dataclass
class Round:
    """Files recorded by one ``record`` command and the rows each table must end up with."""

    files: list[Path]
    good: Counter = field(default_factory=Counter)  # patient ids
    bad: Counter = field(default_factory=Counter)  # (source, line)


def make_round(folder: Path, number: int, rows: int, clean: bool) -> Round:
    """A CSV, a JSONL and a Parquet file (only the CSV when ``clean``: no quarantined rows)."""
    folder.mkdir(parents=True)
    done = Round([])
    csv_lines = ["patient_id,ts,heart_rate,spo2"]
    for i in range(rows):
        ident, bad = f"r{number}c{i}", not clean and i % 7 == 3
        csv_lines.append(f"{ident},2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z,"
                         f"{'x' if bad else 60 + i % 40},97")
        if bad:
            done.bad[(str(folder / "a.csv"), i + 2)] += 1
        else:
            done.good[ident] += 1
    (folder / "a.csv").write_text("\n".join(csv_lines) + "\n")
    done.files.append(folder / "a.csv")
    if clean:
        return done
    with (folder / "b.jsonl").open("w") as out:
        for i in range(rows):
            ident, bad = f"r{number}j{i}", i % 5 == 1
            row = {"patient_id": ident, "heart_rate": 70}
            if not bad:
                row["ts"] = f"2026-01-01T01:00:{i % 60:02d}Z"
                done.good[ident] += 1
            else:
                done.bad[(str(folder / "b.jsonl"), i + 1)] += 1
            out.write(json.dumps(row) + "\n")
    done.files.append(folder / "b.jsonl")
    idents = [f"r{number}p{i}" for i in range(rows)]
    pq.write_table(pa.table({"patient_id": idents, "ts": ["2026-01-01T02:00:00Z"] * rows,
                             "spo2": [None if i % 9 == 4 else 95 for i in range(rows)],
                             "heart_rate": ["high" if i % 9 == 4 else "71" for i in range(rows)]}),
                   folder / "c.parquet")
    for i, ident in enumerate(idents):
        if i % 9 == 4:
            done.bad[(str(folder / "c.parquet"), i + 1)] += 1
        else:
            done.good[ident] += 1
    done.files.append(folder / "c.parquet")
    return done


def table_state(warehouse: Path) -> tuple[Counter, Counter, Counter]:
    """Recording ids, quarantine (source, line) as readers see them, and as stored (all live)."""
    from jobs.recordings.commits import quarantine_rows
    from jobs.storage import open_driver_storage

    storage = open_driver_storage("delta-rs")
    recording, quarantine = (str(warehouse / t / NAME) for t in ("recordings", "quarantine"))
    ids = Counter()
    if storage.exists(recording):
        ids = Counter(storage.read_arrow(recording).column("patient_id").to_pylist())

    def places(table: pa.Table) -> Counter:
        return Counter(zip(table.column("source").to_pylist(), table.column("line").to_pylist(),
                           strict=True))

    view = places(quarantine_rows(storage, recording, quarantine))
    stored = places(storage.read_arrow(quarantine)) if storage.exists(quarantine) else Counter()
    return ids, view, stored


def check(warehouse: Path, before: Round, now: Round) -> bool:
    """Assert all-or-nothing and exactly once; True when ``now`` is recorded."""
    ids, view, _ = table_state(warehouse)
    has_good = ids == before.good + now.good
    has_bad = view == before.bad + now.bad
    lacks_good, lacks_bad = ids == before.good, view == before.bad
    assert (has_good and has_bad) or (lacks_good and lacks_bad), (
        f"recording {'has' if has_good else 'lacks' if lacks_good else 'has part of'} the "
        f"round's rows, its quarantine {'has' if has_bad else 'lacks' if lacks_bad else 'part'}")
    return has_good and bool(now.good)


def run_record(files: list[Path], warehouse: Path, kill: str | None,
               backend: str = "delta-rs") -> tuple[int, str]:
    """``reprise record`` through the harness, on ``backend``; (return code, stderr)."""
    how = [] if kill is None else ["--kill", kill]
    args = ["record", NAME, *map(str, files), "--warehouse", str(warehouse),
            "--catalog", str(ROOT / "schemas")]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REPRISE_DELTA_BACKEND": backend}
    proc = subprocess.run([sys.executable, __file__, "run", *how, "--", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stderr


#: Aimed kills: (clean round, kills). Round 0's runs die before any commit, after the
#: quarantine commit, after a roll-back and a new quarantine commit, after the recording
#: commit; round 1's second run dies right after rolling back; round 2 has no quarantined row.
AIMED = [(False, ["c0", "c1", "c2", "c3"]), (False, ["c1", "c1"]), (True, ["c0", "c1"])]


def campaign(folder: Path, kills: int, seed: int, rows: int = 300,
             say: Callable[[str], None] = print, backend: str = "delta-rs"
             ) -> list[tuple[str, int]]:
    """Run the campaign (``reprise record`` on ``backend``) until ``kills`` runs died by
    SIGKILL; returns (kill, return code)."""
    rng = random.Random(seed)
    warehouse, before = folder / "warehouse", Round([])
    log: list[tuple[str, int]] = []
    took, number = {"record": 0.2, "writing": 0.05}, 0
    while sum(rc != 0 for _, rc in log) < kills:
        if number < len(AIMED):
            clean, plan = AIMED[number]
        else:  # random instants within an uninterrupted record, and within its commits
            clean, plan = False, [f"m{rng.uniform(0, took['record'] * 1000):.0f}",
                                  f"w{rng.uniform(0, took['writing'] * 1000):.1f}"]
        now = make_round(folder / f"round{number}", number, rows, clean)
        for kill in [*plan, None]:
            rc, err = run_record(now.files, warehouse, kill, backend)
            assert rc in (0, -signal.SIGKILL), err
            if TOOK in err:
                took = json.loads(err.split(TOOK)[1].splitlines()[0])
            recorded = check(warehouse, before, now)
            log.append((kill or "none", rc))
            say(f"round {number} kill {kill or 'none':>6}: {'killed' if rc else 'exit 0'}, "
                f"round {'recorded' if recorded else 'absent'}")
            if rc == 0:
                assert recorded, "a record that exits 0 must have recorded the round"
                break
        _, view, stored = table_state(warehouse)
        assert view == stored, "an orphaned quarantine commit outlived a completed record"
        rc, err = run_record(now.files, warehouse, None, backend)  # again: all skipped
        assert rc == 0, err
        before = Round([], before.good + now.good, before.bad + now.bad)
        ids, view, _ = table_state(warehouse)
        assert ids == before.good and view == before.bad, "a re-run recorded a round twice"
        number += 1
    return log


def main() -> None:
    if sys.argv[1:2] == ["run"]:
        harness(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", type=Path, help="work directory (default: a new temporary one)")
    parser.add_argument("--backend", default="delta-rs", choices=["delta-rs", "delta-spark"])
    ns = parser.parse_args()
    import tempfile

    folder = ns.dir or Path(tempfile.mkdtemp(prefix="record_kills_"))
    log = campaign(folder, ns.kills, ns.seed, backend=ns.backend)
    print(f"{sum(rc != 0 for _, rc in log)} kills in {len(log)} runs: every one all or nothing, "
          f"every round recorded exactly once ({folder})")


if __name__ == "__main__":
    main()

"""Kill a continuation (``reprise replay QUERY --continue`` or ``reprise follow QUERY``) with
SIGKILL at every commit boundary and at random instants; the next one finishes the same run.

The campaign, one line per kill::

    PYTHONPATH=. python tests/support/continue_kills.py [--seed 1] [--random 2] [--dir DIR]

For each case (a query of each family, with and without ``--plan``, ``--continue`` and
``follow``, and runs made by a shared replay of several queries) it replays the query, appends
new events, and runs the continuation once uninterrupted (counting its Delta commits) and then
killed after each of its commits and at random instants. After every kill another commit is
appended, and the next continuation (of the same command) must finish the interrupted run: the
same run id, no other run made, the run complete at the version the killed one had planned
(the newest when it had planned none), and its output, late, quarantine and state equal a fresh
replay at that version. ``test_continue_kills.py`` runs a few kills; the whole campaign is its
``slow`` test.

The harness, run by the campaign in a subprocess::

    python tests/support/continue_kills.py run --kill (cK | wMS) -- ARGS...

runs ``reprise ARGS`` and SIGKILLs itself after its K-th Delta commit (K = 0: as the first one
starts) or MS milliseconds after its first commit starts. The fault hook is set here, in the
harness process, by wrapping the storage's commit methods; the commit path never looks for it.
An uninterrupted run reports its commit count and the seconds from its first commit's start to
its last commit's end on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from record_kills import kill_on_commits  # beside this script, which runs as a file

ROOT = Path(__file__).resolve().parents[2]
COMMITS = "harness commits: "  # stderr line of an uninterrupted run: JSON {commits, span}
RECORDING = "vitals"


def _arm(kill: str | None) -> Callable[[], str]:
    """Install the fault hook in this process (the harness): ``cK`` kills after the K-th
    commit (K = 0: as the first starts), ``wMS`` MS ms after the first commit starts; returns
    the line an uninterrupted run reports."""
    seen = kill_on_commits(kill)
    return lambda: COMMITS + json.dumps({"commits": seen["commits"],
                                         "span": seen["last"] - seen["first"]})


def harness(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="continue_kills.py run")
    parser.add_argument("--kill", help="cK or wMS (see _arm)")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    report = _arm(ns.kill)
    from jobs.cli.app import app
    from jobs.cli.process_exit import exit_now

    try:
        app([a for a in ns.args if a != "--"], prog_name="reprise")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    print(report(), file=sys.stderr)
    exit_now(code)


# ---------------------------------------------------------------- running reprise

def reprise(warehouse: Path, *args: str, kill: str | None = None) -> tuple[int, str]:
    """``reprise ARGS`` on ``warehouse`` (the sample catalog) through the harness, in a process
    group of its own: (return code, stdout and stderr)."""
    how = [] if kill is None else ["--kill", kill]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REPRISE_DELTA_BACKEND": "delta-rs",
           "REPRISE_WAREHOUSE": str(warehouse), "REPRISE_CATALOG": str(ROOT / "schemas")}
    proc = subprocess.run([sys.executable, __file__, "run", *how, "--", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600,
                          start_new_session=True)
    return proc.returncode, proc.stdout + proc.stderr


def ok(warehouse: Path, *args: str) -> str:
    """``reprise ARGS``, which must exit 0: its output."""
    rc, out = reprise(warehouse, *args)
    assert rc == 0, f"reprise {' '.join(args)} exited {rc}:\n{out}"
    return out


def append_later_events(warehouse: Path, days: int) -> int:
    """Append the recording's first commit again, ``days`` days later; the new version."""
    from jobs.storage import open_driver_storage

    storage = open_driver_storage("delta-rs")
    path = str(warehouse / "recordings" / RECORDING)
    table = storage.read_arrow(path, 0)
    shift = pa.scalar(days * 86_400_000_000, pa.duration("us"))
    table = table.set_column(table.schema.get_field_index("ts"), "ts",
                             pc.add(table["ts"], shift))
    storage.write(table, path, mode="append")
    return storage.version(path)


# ---------------------------------------------------------------- reading runs

def run_json(warehouse: Path, run_id: str) -> dict:
    return json.loads((warehouse / "runs" / run_id / "run.json").read_text())


def planned_version(info: dict) -> int:
    """The recording version a run is (or is being) replayed to."""
    return next(iter((info.get("sources") or {"input": info["input_version"]}).values()))


def merged_before_recorded(warehouse: Path, info: dict) -> int | None:
    """The recording version a run's merged input (spj) holds the events of, when a killed
    continuation merged them and did not record its segment in ``run.json``; else None."""
    from jobs.execution.merged_inputs import merged_versions
    from jobs.storage import open_driver_storage

    segment = max(1, len(info.get("segments") or []))
    held = merged_versions(open_driver_storage("delta-rs"), info["input_path"], info["run_id"],
                           segment)
    return next(iter(held.values())) if held else None


def is_complete(warehouse: Path, run_id: str) -> bool:
    """The run's manifest holds all its batches and no rewind is pending."""
    info = run_json(warehouse, run_id)
    if info.get("segments") and not info["segments"][-1].get("rewound", True):
        return False
    return _rows(warehouse, run_id, "manifest").num_rows == len(info["cuts"])


def _rows(warehouse: Path, run_id: str, table: str) -> pa.Table:
    from jobs.storage import open_driver_storage

    storage = open_driver_storage("delta-rs")
    path = str(warehouse / "runs" / run_id / table)
    return storage.read_arrow(path) if storage.exists(path) else pa.table({})


def rows(warehouse: Path, run_id: str, table: str) -> list[tuple]:
    """The table's rows, sorted (None for a missing value)."""
    frame = _rows(warehouse, run_id, table).to_pandas()
    return sorted((tuple(r) for r in frame.astype(object).where(frame.notna(), None)
                   .itertuples(index=False)), key=repr)


def state_digest(warehouse: Path, query: str, run_id: str) -> str:
    """The digest of the run's final operator state (independent of its files' layout)."""
    from engine.catalog import load_catalog
    from engine.registry import operator_for

    catalog = load_catalog(ROOT / "schemas")
    op = operator_for(catalog.query(query), catalog.recordings)
    return op.state_codec.digest(op.state_codec.decode(_rows(warehouse, run_id, "state")))


def assert_equals_fresh(warehouse: Path, query: str, run_id: str, plan: str | None,
                        version: int) -> None:
    """Run ``run_id`` of ``query`` equals a fresh replay at ``version`` (made here)."""
    fresh = f"fresh-{run_id}-v{version}"
    ok(warehouse, "replay", query, "--version", str(version), "--run-id", fresh,
       *(["--plan", plan] if plan else []))
    assert is_complete(warehouse, run_id), f"{run_id} is not complete"
    counts = ["rows_in", "rows_out", "late", "quarantined"]
    mine, theirs = (_rows(warehouse, r, "manifest").sort_by("batch").select(counts).to_pylist()
                    for r in (run_id, fresh))
    assert mine == theirs, "manifest counts differ from a fresh replay's"
    for table in ("output", "late", "quarantine"):
        assert rows(warehouse, run_id, table) == rows(warehouse, fresh, table), table
    assert state_digest(warehouse, query, run_id) == state_digest(warehouse, query, fresh)
    shutil.rmtree(warehouse / "runs" / fresh)


# ---------------------------------------------------------------- the campaign

@dataclass(frozen=True)
class Case:
    """A query continued by ``command`` (``continue`` or ``follow``), with ``plan`` or the
    query's own; ``shared``: its run was made by a shared replay of it and ``partner``."""

    query: str
    plan: str | None = None
    command: str = "continue"
    partner: str = ""

    def continuation(self) -> list[str]:
        plan = ["--plan", self.plan] if self.plan else []
        if self.command == "follow":
            return ["follow", self.query, "--max-segments", "1", "--every", "1s",
                    "--for", "120s", *plan]
        return ["replay", self.query, "--continue", *plan]

    def __str__(self) -> str:
        shared = f" (shared with {self.partner})" if self.partner else ""
        return f"{self.command} {self.query} {self.plan or 'own plan'}{shared}"


def prepare(folder: Path, case: Case, keys: int = 20, events: int = 4_000) -> tuple[Path, str]:
    """A warehouse with the case's completed run and a newer recording version, kept as it is
    in ``folder/pristine`` for :func:`restore`: (warehouse, run id)."""
    warehouse = folder / "warehouse"
    ok(warehouse, "generate", RECORDING, "--keys", str(keys), "--events", str(events),
       "--commits", "3")
    plan = ["--plan", case.plan] if case.plan else []
    ok(warehouse, "replay", case.query, *([case.partner] if case.partner else []), *plan)
    (run_id,) = [r.name for r in (warehouse / "runs").iterdir()
                 if run_json(warehouse, r.name)["query"] == case.query]
    append_later_events(warehouse, days=1)
    shutil.copytree(warehouse, folder / "pristine")
    return warehouse, run_id


def restore(warehouse: Path) -> None:
    """Put back the warehouse :func:`prepare` made, at the same place (a run's ``run.json`` and
    tables name their files by absolute paths)."""
    shutil.rmtree(warehouse)
    shutil.copytree(warehouse.parent / "pristine", warehouse)


def kill_and_finish(work: Path, case: Case, run_id: str, kill: str) -> str:
    """In the warehouse :func:`prepare` made (restored), kill the case's continuation at
    ``kill``, append a commit, run the continuation again and check it finished the interrupted
    run; a line about it."""
    restore(work)
    rc, out = reprise(work, *case.continuation(), kill=kill)
    assert rc in (0, -signal.SIGKILL), f"{case} --kill {kill} exited {rc}:\n{out}"
    after_kill = run_json(work, run_id)
    interrupted = not is_complete(work, run_id)
    newest = append_later_events(work, days=2)
    runs_before = sorted(p.name for p in (work / "runs").iterdir())
    ok(work, *case.continuation())
    assert sorted(p.name for p in (work / "runs").iterdir()) == runs_before, \
        "the continuation after the kill made another run"
    version = planned_version(run_json(work, run_id))
    wanted = (planned_version(after_kill) if interrupted
              else merged_before_recorded(work, after_kill) or newest)
    assert version == wanted, (f"{case} --kill {kill}: run {run_id} went to v{version}, "
                               f"not v{wanted}")
    assert_equals_fresh(work, case.query, run_id, case.plan, version)
    return (f"{case} kill {kill:>7}: {'killed' if rc else 'exit 0'}, "
            f"{'interrupted' if interrupted else 'complete'} -> finished {run_id} at v{version}")


def uninterrupted(work: Path, case: Case) -> dict:
    """The case's continuation run once to the end in the warehouse :func:`prepare` made
    (restored): {commits, span}."""
    restore(work)
    rc, out = reprise(work, *case.continuation())
    assert rc == 0 and COMMITS in out, out
    return json.loads(out.split(COMMITS)[1].splitlines()[0])


def campaign(folder: Path, case: Case, kills: list[str] | None = None, randoms: int = 0,
             seed: int = 1, say: Callable[[str], None] = print) -> int:
    """Kill the case's continuation at ``kills`` (default: after each of its commits, as its
    first starts included) and at ``randoms`` random instants; the kills made."""
    warehouse, run_id = prepare(folder, case)
    took = uninterrupted(warehouse, case)
    assert took["commits"] > 0, "the continuation committed nothing"
    if kills is None:
        kills = [f"c{k}" for k in range(took["commits"])]
    rng = random.Random(seed)
    kills = [*kills, *(f"w{rng.uniform(0, took['span'] * 1000):.1f}" for _ in range(randoms))]
    for kill in kills:
        say(kill_and_finish(warehouse, case, run_id, kill))
    return len(kills)


#: The cases of the whole campaign: every family, with and without --plan, --continue and
#: follow, and runs made by a shared replay of several queries.
CASES = [
    Case("vitals_hr_1m", "rows:1000"),
    Case("vitals_hr_1m", None, "follow"),
    Case("vitals_episode_max_avg", None),
    Case("vitals_tachy_count", "rows:1500", "follow"),
    Case("vitals_low_spo2", "rows:1000"),
    Case("vitals_spo2_histogram", "rows:1000"),
    Case("vitals_spo2_histogram", None, "follow"),
    Case("vitals_hr_1m", "rows:1000", partner="vitals_low_spo2"),
    Case("vitals_low_spo2", "rows:1000", "follow", partner="vitals_hr_1m"),
]


def main() -> None:
    if sys.argv[1:2] == ["run"]:
        harness(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--random", type=int, default=2, help="random kills per case")
    parser.add_argument("--dir", type=Path, help="work directory (default: a new temporary one)")
    ns = parser.parse_args()
    import tempfile

    folder = ns.dir or Path(tempfile.mkdtemp(prefix="continue_kills_"))
    total = 0
    for i, case in enumerate(CASES):
        total += campaign(folder / f"case{i}", case, randoms=ns.random, seed=ns.seed + i)
    print(f"{total} kills: every interrupted continuation finished by the next one ({folder})")


if __name__ == "__main__":
    main()

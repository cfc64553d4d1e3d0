"""A run's ``run.json``: every command that reads a damaged one stops with one line naming the
file and the field (never a traceback); ``runs`` shows when a run was made, also after it was
continued; ``--continue --run-id`` of a run whose definition changed leaves an existing fresh
run as it was made. In-process, on delta-rs, without Spark (small runs replay in the command's
process)."""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.runs.run_info import ReplayError, existing_run, load_run_file, run_header

ROOT = Path(__file__).resolve().parents[3]
QUERY = "vitals_hr_1m"
#: The fields a run.json must have (the others have defaults), and the keys of its nested
#: records that must be there.
REQUIRED = ["run_id", "query", "fingerprint", "recording", "input_path", "input_version", "plan",
            "cuts", "files", "buckets", "operator"]
FILE_KEYS = ["uri", "commit_version", "rows", "offset"]
SEGMENT_KEYS = ["segment", "from_version", "to_version", "first_batch", "batches", "events"]


def vitals_csv(path: Path, first_minute: int, rows: int = 60) -> Path:
    lines = ["patient_id,ts,heart_rate,spo2"]
    for i in range(rows):
        minute, second = divmod(first_minute * 60 + i * 7, 60)
        lines.append(f"p{i % 3},2026-01-01T{minute // 60:02d}:{minute % 60:02d}:{second:02d}Z,"
                     f"{60 + i % 40},{90 + i % 9}")
    path.write_text("\n".join(lines) + "\n")
    return path


class Cli:
    """The ``reprise`` command on one warehouse, in this process, on delta-rs."""

    def __init__(self, root: Path):
        self.root = root
        self.warehouse = root / "wh"

    def __call__(self, *args: str, catalog: Path = ROOT / "schemas"):
        backend = [] if args[0] == "runs" else ["--backend", "delta-rs", "--catalog",
                                                str(catalog)]
        return CliRunner().invoke(app, [*args, "--warehouse", str(self.warehouse), *backend])

    def ok(self, *args: str, catalog: Path = ROOT / "schemas") -> str:
        result = self(*args, catalog=catalog)
        assert result.exit_code == 0 and result.exception is None, result.output
        return result.output

    def record(self, name: str, first_minute: int) -> None:
        self.ok("record", "vitals", str(vitals_csv(self.root / name, first_minute)))

    def run_file(self, run_id: str) -> Path:
        return self.warehouse / "runs" / run_id / "run.json"

    def runs(self) -> dict[str, list[str]]:
        """The cells of each row of ``runs``, by run id."""
        rows = {}
        for line in self.ok("runs").splitlines():
            cells = [c.strip() for c in line.split("│")[1:-1]]
            if cells and cells[0] and cells[0] != "run":
                rows[cells[0]] = cells
        return rows


def new_cli(root: Path) -> Cli:
    cli = Cli(root)
    cli.record("a.csv", 0)
    cli.record("b.csv", 10)
    return cli


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> tuple[Cli, str, dict]:
    """A warehouse with one complete run of ``QUERY`` and its ``run.json``, with a segment
    record added: an earlier completed continuation and a pending one, so that the fuzz
    reaches every kind of field."""
    cli = new_cli(tmp_path_factory.mktemp("runjson"))
    cli.ok("replay", QUERY)
    (run_id,) = cli.runs()
    doc = json.loads(cli.run_file(run_id).read_text())
    doc["segments"] = [
        {"segment": 0, "from_version": None, "to_version": 0, "first_batch": 0, "batches": 1,
         "events": 60, "rewound": True, "note": "fresh run instead of continuing x: y"},
        {"segment": 1, "from_version": 0, "to_version": 1, "first_batch": 1, "batches": 1,
         "events": 60, "rewind_seq": 60, "old_total": 60, "rewound": False,
         "txn": "segment-shifted", "sources": {"input": 1}}]
    cli.run_file(run_id).write_text(json.dumps(doc))
    assert run_id in cli.runs()  # the document is a valid run description
    return cli, run_id, doc


def paths(value: Any, at: tuple = ()) -> list[tuple]:
    """Where a value can be put in ``value``: itself and, recursively, its members (not inside
    the stored query definition, which the catalog's parser checks)."""
    out = [at]
    if at == ("query_spec",):
        return out
    members = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for key, member in members:
        out += paths(member, (*at, key))
    return out


def kind(value: Any) -> str:
    return "bool" if isinstance(value, bool) else type(value).__name__


#: Values of every JSON kind, nested ones among them.
VALUES = [None, True, 0, 5, 1.5, "", "x", [], [1], [[0, 1]], {}, {"a": 1}, {"rows": -1}]
#: Integers no field of a run can hold.
BAD_INTEGERS = [-1, -(2**70), 2**63, 99999999999999999999999]


def wrong_values(original: Any) -> list[Any]:
    """Values that cannot replace ``original`` in a run description: another JSON kind (an
    absent ``from_version``, null, may become an integer), and for an integer one out of
    range."""
    allowed = {kind(original)} | ({"int"} if original is None else set())
    return [v for v in VALUES if kind(v) not in allowed] + (
        BAD_INTEGERS if kind(original) == "int" else [])


def removable(path: tuple) -> bool:
    """Whether the member at ``path`` of a run description must be there."""
    if len(path) == 1:
        return path[0] in REQUIRED
    if len(path) == 3 and path[0] == "files":
        return path[2] in FILE_KEYS
    return len(path) == 3 and path[0] == "segments" and path[2] in SEGMENT_KEYS


@st.composite
def damaged(draw, doc: dict) -> tuple[dict | list, str]:
    """A copy of ``doc`` with one member replaced by a wrong value or removed, and what."""
    where = draw(st.sampled_from(paths(doc)))
    remove = removable(where) and draw(st.booleans())
    value = None if remove else draw(st.sampled_from(wrong_values(get(doc, where))))
    if not where:
        return value, f"whole file = {value!r}"
    out = copy.deepcopy(doc)
    parent = get(out, where[:-1])
    if remove:
        del parent[where[-1]]
    else:
        parent[where[-1]] = value
    return out, f"{where} {'removed' if remove else f'= {value!r}'}"


def get(doc: Any, path: tuple) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def test_the_fuzz_damages_every_field(made):
    _, _, doc = made
    reached = {p[0] for p in paths(doc) if p}
    assert set(REQUIRED) | {"segments", "sources", "exchange", "query_spec", "created",
                            "engines"} <= reached


@settings(max_examples=80, derandomize=True, database=None)
@given(data=st.data())
def test_every_command_reading_a_damaged_run_json_says_one_line_naming_it(made, data):
    # before: "segments": 5 gave `runs` a TypeError traceback, "input_version": "x" and
    # "files": [1] `validate` ones, a huge or negative "buckets" was taken
    cli, run_id, doc = made
    bad, what = data.draw(damaged(doc))
    run_file = cli.run_file(run_id)
    run_file.write_text(json.dumps(bad))
    try:
        for args in (["runs"], ["validate", run_id], ["replay", QUERY, "--run-id", run_id],
                     ["replay", QUERY, "--continue", "--run-id", run_id],
                     ["replay", QUERY, "--continue"], ["follow", QUERY, "--max-segments", "0"],
                     ["gc"]):
            result = cli(*args)
            lines = result.output.strip().splitlines()
            assert result.exit_code == 1 and len(lines) == 1, (what, args, result.output,
                                                               result.exception)
            assert lines[0].startswith(f"error: {run_file}: not a readable run description "
                                       "(field "), (what, args, lines[0])
    finally:
        run_file.write_text(json.dumps(doc))


def _set(path: tuple, value: Any):
    def change(doc: dict) -> None:
        get(doc, path[:-1])[path[-1]] = value
    return change


#: Damage of the right types that no run has, and the field its error line names.
INCONSISTENT = [
    (_set(("run_id",), "another-run"), "run_id"),
    (_set(("plan",), "rows:0"), "plan"),
    (_set(("recording",), "../x"), "recording"),
    (_set(("exchange",), "carrier-pigeon"), "exchange"),
    (_set(("created",), "2026-01-01T00:00:00"), "created"),  # (no time zone)
    (_set(("buckets",), 0), "buckets"),
    (_set(("engines", 0, "engine"), "gpu"), "engines[0].engine"),
    (_set(("engines", 0, "batches"), [1, 0]), "engines[0].batches"),
    (_set(("engines", 0, "batches"), [0, 99]), "engines[0].batches"),
    (_set(("buckets",), 10_001), "buckets"),
    (_set(("files", 1, "offset"), 61), "files[1].offset"),
    (_set(("cuts",), [0]), "cuts"),
    (_set(("cuts",), [1, 120]), "cuts[0]"),
    (_set(("cuts",), [0, 70, 60, 120]), "cuts[2]"),
    (_set(("cuts",), [0, 60, 119]), "cuts[2]"),
    (_set(("segments", 1, "segment"), 2), "segments[1].segment"),
    (_set(("segments", 1, "batches"), 2), "segments[1].batches"),
    (_set(("segments", 0, "batches"), 3), "segments[0].batches"),
    (lambda doc: doc["segments"][0].update(rewound=False, rewind_seq=0, old_total=60),
     "segments[0].rewound"),
    (_set(("segments", 1, "rewind_seq"), 59), "segments[1].rewind_seq"),
    (_set(("segments", 1, "old_total"), 121), "segments[1].old_total"),
    (_set(("segments", 1, "from_version"), None), "segments[1].from_version"),
    (lambda doc: doc["files"][0].pop("rows"), "files[0]"),
    (lambda doc: doc["segments"][1].pop("old_total"), "segments[1].old_total"),
    (lambda doc: doc.update(extra=1), "extra"),
]


@pytest.mark.parametrize(("change", "field"), INCONSISTENT)
def test_a_run_json_whose_fields_do_not_fit_together_is_refused_naming_the_field(made, change,
                                                                                  field):
    # before: taken (a pending first segment gave `replay --run-id` a ValueError traceback)
    cli, run_id, doc = made
    bad = copy.deepcopy(doc)
    change(bad)
    run_file = cli.run_file(run_id)
    run_file.write_text(json.dumps(bad))
    try:
        for args in (["runs"], ["replay", QUERY, "--run-id", run_id]):
            result = cli(*args)
            lines = result.output.strip().splitlines()
            assert result.exit_code == 1 and len(lines) == 1, (args, result.output)
            assert lines[0].startswith(f"error: {run_file}: not a readable run description "
                                       f"(field {field}: "), lines[0]
    finally:
        run_file.write_text(json.dumps(doc))


def test_runs_shows_when_a_run_was_made_also_after_it_was_continued(tmp_path):
    # before: the column showed when run.json was last written, which a continuation does
    cli = new_cli(tmp_path)
    cli.ok("replay", QUERY)
    (run_id,) = cli.runs()
    os.utime(cli.run_file(run_id), (1_600_000_000, 1_600_000_000))  # (written long ago)
    created = cli.runs()[run_id][6]
    assert not created.startswith("2020"), created  # the run's own time, not its file's
    cli.record("c.csv", 20)
    assert "segment 1: v1 -> v2" in cli.ok("replay", QUERY, "--continue")
    row = cli.runs()[run_id]
    assert row[7].startswith("2") and row[6] == created, row


def test_continuing_a_changed_query_leaves_an_existing_fresh_run_as_it_was_made(tmp_path):
    # before: `--continue --run-id OLD` of a changed query wrote "fresh run instead of
    # continuing OLD" into the run.json of the fresh replay made earlier by `--continue`
    cli = new_cli(tmp_path)
    changed = tmp_path / "changed"
    shutil.copytree(ROOT / "schemas", changed)
    query_file = changed / "queries" / f"{QUERY}.yaml"
    query_file.write_text(query_file.read_text().replace("lateness: 10s", "lateness: 20s"))
    cli.ok("replay", QUERY)
    (old,) = cli.runs()
    out = cli.ok("replay", QUERY, "--continue", catalog=changed)
    assert "no completed run to continue" in out
    (fresh,) = set(cli.runs()) - {old}
    made_as = cli.run_file(fresh).read_text()
    out = cli.ok("replay", QUERY, "--continue", "--run-id", old, catalog=changed)
    assert cli.run_file(fresh).read_text() == made_as
    assert set(cli.runs()) == {old, fresh}
    assert f"{old}: cannot be continued (the definition of query '{QUERY}' changed" in out
    assert f"would be run {fresh}, which exists (complete): nothing to do" in out, out
    # without it, the fresh run is made, with the reason in its first segment's note
    shutil.rmtree(cli.run_file(fresh).parent)
    out = cli.ok("replay", QUERY, "--continue", "--run-id", old, catalog=changed)
    assert "from scratch" in out and f"{fresh}: segment 0: start -> v1" in out, out
    note = json.loads(cli.run_file(fresh).read_text())["segments"][0]["note"]
    assert note.startswith(f"fresh run instead of continuing {old}: the definition"), note


def test_an_existing_run_of_another_definition_is_refused_naming_it(made, tmp_path):
    cli, run_id, _ = made
    run_file = tmp_path / run_id / "run.json"
    run_file.parent.mkdir()
    shutil.copy(cli.run_file(run_id), run_file)
    info = load_run_file(run_file)
    assert existing_run(tmp_path / "absent" / "run.json", info.query, info.fingerprint) is None
    assert existing_run(run_file, info.query, info.fingerprint) == info
    for query, fp in ((info.query, "another"), ("another_query", info.fingerprint)):
        with pytest.raises(ReplayError, match=f"run '{run_id}' was made by a different query"):
            existing_run(run_file, query, fp)


def test_a_run_header_is_read_from_its_lines_and_a_damaged_one_from_the_whole_file(tmp_path):
    cli = new_cli(tmp_path)
    cli.ok("replay", QUERY)
    (run_id,) = cli.runs()
    path = cli.run_file(run_id)
    info = load_run_file(path)
    head = run_header(path)
    assert (head.query, head.fingerprint, head.plan, head.input_version, head.sources,
            head.created) == (info.query, info.fingerprint, info.plan, info.input_version,
                              info.sources, info.created)
    text = path.read_text()
    # the long lists are not decoded: a damaged one leaves the header readable, not the run
    path.write_text("\n".join('"files": [{"uri": ' if line.startswith('"files": ') else line
                              for line in text.splitlines()))
    assert run_header(path) == head
    with pytest.raises(ReplayError, match=r"run\.json: not a readable run description"):
        load_run_file(path)
    # a header field of the wrong type: the whole file is read, and refused naming the field
    path.write_text(text.replace(f'"input_version": {info.input_version},',
                                 f'"input_version": "{info.input_version}",'))
    with pytest.raises(ReplayError, match="field input_version"):
        run_header(path)
    # a file in another form (one line) is read whole
    path.write_text(json.dumps(json.loads(text)))
    assert run_header(path) == head

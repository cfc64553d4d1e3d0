"""What a run is on disk: ``run.json`` (:class:`RunInfo`), the manifest's schema, and the
fingerprint of the query definition a run was made with."""

from __future__ import annotations

import hashlib
import json
from dataclasses import MISSING, dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from engine.batch_plans import parse_plan
from engine.errors import RepriseError
from engine.operator import KeyedOperator
from engine.specs import QuerySpec
from jobs.settings import EXCHANGES, MAX_BUCKETS
from jobs.storage import Txn
from jobs.warehouse import Warehouse
from jobs.warehouse_names import check_name

#: The ways a run maps keys to buckets (:mod:`jobs.execution.bucketing`).
BUCKETINGS = ("range", "modulo")

#: A continued run's segment ``k`` commits batch ``b`` under app transaction version
#: ``k << SEGMENT_SHIFT | b`` (:meth:`RunInfo.txn`); segments record the scheme as ``txn``.
SEGMENT_SHIFT = 32
TXN_SCHEME = "segment-shifted"

MANIFEST_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("batch", pa.int64()), ("kind", pa.string()),
    ("seq_lo", pa.int64()), ("seq_hi", pa.int64()), ("rows_in", pa.int64()),
    ("rows_out", pa.int64()), ("late", pa.int64()), ("quarantined", pa.int64()),
    ("state_rows", pa.int64()), ("state_bytes", pa.int64()), ("state_version", pa.int64()),
    ("output_version", pa.int64()), ("duration_s", pa.float64()),
])


class ReplayError(RepriseError):
    """A replay cannot start or continue; the message says why and what to do."""


@dataclass
class RunInfo:
    """The persisted description of a run (``run.json``)."""

    run_id: str
    query: str
    fingerprint: str
    recording: str
    input_path: str
    input_version: int
    plan: str
    cuts: list[int]
    files: list[dict]
    buckets: int
    operator: str
    query_spec: dict = field(default_factory=dict)
    #: Pinned version of each input recording, by its name in the query's ``inputs``.
    sources: dict[str, int] = field(default_factory=dict)
    #: How events reach the bucket workers (fixed per run: the two hash keys differently).
    exchange: str = "spark"
    #: The run's segments once it has been continued (:mod:`jobs.runs.run_segments`): segment 0 is
    #: the
    #: first replay, each later one a continuation to a newer recording version.
    segments: list[dict] = field(default_factory=list)
    #: When the run was made (UTC, ISO 8601, seconds); kept across continuations. Runs made
    #: before it was recorded have "" (``reprise runs`` then shows when run.json was written).
    created: str = ""
    #: Which engine ran which batches: ``{"batches": [first, last], "engine": "spark" or
    #: "driver", "reason": ...}``, in order (see :mod:`jobs.runs.engine_choice`).
    engines: list[dict] = field(default_factory=list)
    #: How keys map to buckets (:mod:`jobs.execution.bucketing`): ``range`` (ranges of the key
    #: hash); runs made before it was recorded have ``modulo`` and keep it.
    bucketing: str = "modulo"
    #: Input bytes the bucket tasks of the direct exchange read so far (Parquet column chunks;
    #: see :mod:`jobs.execution.direct_exchange`).
    input_bytes: int = 0
    #: A pipeline stage running fused with its upstream's run: that run's id, until the chain
    #: is complete and the stage's cut points and input are recorded (then "": see
    #: :mod:`jobs.runs.pipeline_fusion`).
    fused_with: str = ""

    def txn(self, table: str, batch: int) -> Txn:
        """The Delta app transaction of batch ``batch``'s commit to the run's ``table``: app id
        ``<run_id>/<table>``, version the batch id plus ``k << SEGMENT_SHIFT`` in segment ``k``
        (a continuation recommits batch ids an earlier segment used). One app id per table over
        all segments: delta-rs finds an app id a table has seen in the newest log entries, and
        looks one it never saw up in the whole log since the last checkpoint. A segment planned
        before this scheme (no ``txn`` in its record) keeps its ``<run_id>/s<k>/<table>`` ids."""
        k = len(self.segments) - 1
        if k >= 1 and self.segments[-1].get("txn") != TXN_SCHEME:
            return Txn(f"{self.run_id}/s{k}/{table}", batch)
        return Txn(f"{self.run_id}/{table}", (max(k, 0) << SEGMENT_SHIFT) + batch)

    @property
    def batches(self) -> int:
        return len(self.cuts) - 1

    @property
    def total(self) -> int:
        return self.cuts[-1]


def fingerprint(query: QuerySpec, operator: KeyedOperator) -> str:
    """Hash of what determines a run's output (query text, operator version; a pipeline
    stage's upstream queries' texts too)."""
    upstreams, upstream = [], query.upstream
    while upstream is not None:
        upstreams.append(upstream.query.raw)
        upstream = upstream.query.upstream
    text = json.dumps({"query": query.raw, "op": [operator.name, operator.version],
                       **({"upstreams": upstreams} if upstreams else {})},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def read_run(warehouse: Warehouse, run_id: str) -> RunInfo:
    """Load ``run.json`` of an existing run."""
    path = warehouse.run_dir(run_id) / "run.json"
    if not path.exists():
        known = ", ".join(warehouse.runs()) or "none"
        raise ReplayError(f"no run {run_id!r} under {warehouse.root} (known runs: {known})")
    return load_run_file(path)


def load_run_file(path: Path) -> RunInfo:
    """The :class:`RunInfo` of the ``run.json`` at ``path``; a damaged file (not JSON, fields
    missing, unknown, of the wrong type or out of range) is a :class:`ReplayError` naming it
    and, for a bad field, the field."""
    try:
        text = path.read_text()
        data = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ReplayError(f"{path}: not a readable run description ({exc}); {AFRESH}") from exc
    if _CHECKED.get(path) == _digest(text):  # (checked, or written here, as it is)
        return RunInfo(**data)
    try:
        info = _checked(data, path.parent.name)
    except _BadField as exc:
        raise ReplayError(f"{path}: not a readable run description (field {exc.where}: "
                          f"{exc.problem}); {AFRESH}") from None
    note_checked(path, text)
    return info



def existing_run(run_file: Path, query: str, fp: str) -> RunInfo | None:
    """The run at ``run_file`` (None when there is none yet), which must have been made by the
    definition (fingerprint ``fp``) of ``query``: another one is a :class:`ReplayError`."""
    if not run_file.exists():
        return None
    info = load_run_file(run_file)
    if info.query != query or info.fingerprint != fp:
        raise ReplayError(f"run {run_file.parent.name!r} was made by a different query "
                          f"definition ({info.query}, fingerprint {info.fingerprint}); choose "
                          "another --run-id")
    return info

@dataclass
class RunHeader:
    """The fields of ``run.json`` that choose a run among others (:func:`run_header`)."""

    query: str
    fingerprint: str
    plan: str
    input_version: int
    sources: dict[str, int]
    created: str


#: The type of each field of :class:`RunHeader` as JSON decodes it.
_HEADER_TYPES = {"query": str, "fingerprint": str, "plan": str, "input_version": int,
                 "sources": dict, "created": str}


def run_header(path: Path) -> RunHeader:
    """The :class:`RunHeader` of the ``run.json`` at ``path``, decoded from the lines that
    hold its fields (the file has one field a line) and not from the whole text, whose lists
    grow with every segment of a continued run. A file in another form, or one whose header
    fields are not what they should be, is read whole (:func:`load_run_file`: a damaged one is
    its :class:`ReplayError`)."""
    found: dict[str, Any] = {}
    try:
        for line in path.read_text().splitlines():
            name, sep, value = line.partition(": ")
            name = name.strip('"')
            if sep and name in _HEADER_TYPES:
                found[name] = json.loads(value.removesuffix(","))
    except (OSError, UnicodeDecodeError, ValueError):
        found = {}
    if found.keys() == _HEADER_TYPES.keys() and all(
            type(found[n]) is t for n, t in _HEADER_TYPES.items()):
        return RunHeader(**found)
    info = load_run_file(path)
    return RunHeader(**{n: getattr(info, n) for n in _HEADER_TYPES})


#: The digest of the last text of each ``run.json`` (the last :data:`_CHECKED_KEPT`) that was
#: checked or written by this process: it is not checked again while it has that text. Its
#: lists (files, cut points, segments) grow with every segment of a continued run, and a
#: continuation reads it three times.
_CHECKED: dict[Path, bytes] = {}
_CHECKED_KEPT = 16


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def note_checked(path: Path, text: str) -> None:
    """Note that ``text``, the content of the ``run.json`` at ``path``, needs no checking (it
    was checked, or written from a :class:`RunInfo`)."""
    _CHECKED.pop(path, None)
    if len(_CHECKED) >= _CHECKED_KEPT:
        del _CHECKED[next(iter(_CHECKED))]
    _CHECKED[path] = _digest(text)


AFRESH = "remove the run's directory to replay it afresh"
#: The largest integer a field of ``run.json`` may hold (versions, arrival sequences and row
#: counts are 64-bit in the run's tables).
MAX_INT = 2**63 - 1
#: The keys of an entry of ``files`` (:class:`engine.batch_plans.InputFile`).
FILE_KEYS = ("uri", "commit_version", "rows", "offset")
#: The keys every segment has; a segment whose rewind is pending also has :data:`REWIND_KEYS`.
SEGMENT_KEYS = ("segment", "from_version", "to_version", "first_batch", "batches", "events")
REWIND_KEYS = ("rewind_seq", "old_total")


class _BadField(Exception):
    """A field of ``run.json`` that is not what a run holds."""

    def __init__(self, where: str, problem: str):
        super().__init__(where, problem)
        self.where, self.problem = where, problem


def _shown(value: Any) -> str:
    """``value`` for a message, cut to 60 characters."""
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _integer(value: Any, where: str, low: int = 0, high: int = MAX_INT) -> int:
    if type(value) is not int or not low <= value <= high:
        raise _BadField(where, f"expected an integer from {low} to {high:,}, got "
                               f"{_shown(value)}")
    return value


def _text(value: Any, where: str, empty: bool = False) -> str:
    if not isinstance(value, str) or not (value or empty):
        raise _BadField(where, f"expected {'a' if empty else 'a non-empty'} string, got "
                               f"{_shown(value)}")
    return value


def _object(value: Any, where: str, what: str = "an object") -> dict:
    if not isinstance(value, dict):
        raise _BadField(where, f"expected {what}, got {_shown(value)}")
    return value


def _list(value: Any, where: str, what: str) -> list:
    if not isinstance(value, list):
        raise _BadField(where, f"expected a list of {what}, got {_shown(value)}")
    return value


def _versions(value: Any, where: str) -> dict[str, int]:
    """A map of input name to recording version."""
    for name, version in _object(value, where, "an object of versions by input").items():
        _integer(version, f"{where}.{name}")
    return value


def _checked(data: Any, directory: str) -> RunInfo:
    """``data`` (a parsed ``run.json`` in the run directory ``directory``) as a
    :class:`RunInfo`, after checking the type and range of every field and that the input
    files and cut points agree; raises :class:`_BadField` naming the first bad field."""
    _object(data, "(the whole file)", "an object of the run's fields")
    names = {f.name for f in fields(RunInfo)}
    required = {f.name for f in fields(RunInfo)
                if f.default is MISSING and f.default_factory is MISSING}
    if unknown := sorted(set(data) - names):
        raise _BadField(unknown[0], "not a field of a run")
    if missing := sorted(required - set(data)):
        raise _BadField(missing[0], "missing")
    if _text(data["run_id"], "run_id") != directory:
        raise _BadField("run_id", f"{_shown(data['run_id'])} is not the name of the run's "
                                  f"directory ({directory!r})")
    for name in ("query", "fingerprint", "input_path", "operator"):
        _text(data[name], name)
    for name, check in (("recording", lambda v: check_name("recording name", v)),
                        ("plan", parse_plan)):
        try:
            check(_text(data[name], name))
        except RepriseError as exc:
            raise _BadField(name, str(exc)) from None
    _integer(data["input_version"], "input_version")
    _integer(data["buckets"], "buckets", 1, MAX_BUCKETS)
    if data.get("bucketing", "modulo") not in BUCKETINGS:
        raise _BadField("bucketing", f"expected one of {', '.join(map(json.dumps, BUCKETINGS))}"
                                     f", got {_shown(data['bucketing'])}")
    _integer(data.get("input_bytes", 0), "input_bytes")
    if data.get("exchange", "spark") not in EXCHANGES:
        raise _BadField("exchange", f"expected one of {', '.join(map(json.dumps, EXCHANGES))}, "
                                    f"got {_shown(data['exchange'])}")
    _object(data.get("query_spec", {}), "query_spec")
    _versions(data.get("sources", {}), "sources")
    _text(data.get("created", ""), "created", empty=True)
    _text(data.get("fused_with", ""), "fused_with", empty=True)
    if data.get("created"):
        try:
            aware = datetime.fromisoformat(data["created"]).tzinfo is not None
        except ValueError:
            aware = False
        if not aware:
            raise _BadField("created", f"expected a time such as 2026-01-31T12:00:00+00:00, "
                                       f"got {_shown(data['created'])}")
    _check_files_and_cuts(data["files"], data["cuts"])
    segments = _list(data.get("segments", []), "segments", "segments")
    for k, segment in enumerate(segments):
        _check_segment(segment, f"segments[{k}]", first=k == 0)
        _check_segment_place(segment, f"segments[{k}]", k, k == len(segments) - 1,
                             data["cuts"])
    for k, entry in enumerate(_list(data.get("engines", []), "engines", "engine entries")):
        _check_engine_entry(entry, f"engines[{k}]", len(data["cuts"]) - 1)
    return RunInfo(**data)


def _check_engine_entry(entry: Any, where: str, last_batch: int) -> None:
    """An entry of ``engines``: the first and last batch it ran, the engine, why."""
    _object(entry, where, "an object of batches, engine and reason")
    batches = _list(entry.get("batches"), f"{where}.batches", "two batch ids")
    if len(batches) != 2:
        raise _BadField(f"{where}.batches", f"expected two batch ids, got {_shown(batches)}")
    first = _integer(batches[0], f"{where}.batches", 0, last_batch)
    _integer(batches[1], f"{where}.batches", first, last_batch)
    if entry.get("engine") not in ("spark", "driver"):
        raise _BadField(f"{where}.engine", f"expected \"spark\" or \"driver\", got "
                                           f"{_shown(entry.get('engine'))}")
    _text(entry.get("reason", ""), f"{where}.reason", empty=True)


def _check_files_and_cuts(files: Any, cuts: Any) -> None:
    """The input files follow each other in arrival order; the cut points run from 0 to their
    events, never decreasing."""
    offset = 0
    for i, entry in enumerate(_list(files, "files", "input files")):
        where = f"files[{i}]"
        _object(entry, where, "an input file (" + ", ".join(FILE_KEYS) + ")")
        if sorted(entry) != sorted(FILE_KEYS):
            raise _BadField(where, "expected the keys " + ", ".join(FILE_KEYS) + ", got "
                            + (", ".join(sorted(map(str, entry))) or "none"))
        _text(entry["uri"], f"{where}.uri")
        _integer(entry["commit_version"], f"{where}.commit_version")
        _integer(entry["rows"], f"{where}.rows")
        if _integer(entry["offset"], f"{where}.offset") != offset:
            raise _BadField(f"{where}.offset", f"expected {offset} (the rows of the files "
                                               f"before it), got {entry['offset']}")
        offset += entry["rows"]
    _list(cuts, "cuts", "cut points")
    if len(cuts) < 2:
        raise _BadField("cuts", f"expected at least 2 cut points, got {_shown(cuts)}")
    _integer(cuts[0], "cuts[0]", 0, 0)
    for i in range(1, len(cuts)):  # never decreasing, never past the input's events
        _integer(cuts[i], f"cuts[{i}]", cuts[i - 1], offset)
    if cuts[-1] != offset:
        raise _BadField(f"cuts[{len(cuts) - 1}]", f"expected {offset} (the events of the "
                                                  f"input files), got {cuts[-1]}")


def _check_segment(segment: Any, where: str, first: bool) -> None:
    """A segment record (:mod:`jobs.runs.run_segments`); only the first starts from no version."""
    _object(segment, where, "a segment object")
    pending = segment.get("rewound", True) is False
    for key in (*SEGMENT_KEYS, *(REWIND_KEYS if pending else ())):
        if key not in segment:
            raise _BadField(f"{where}.{key}", "missing")
    for key in (*SEGMENT_KEYS, *REWIND_KEYS):
        if key in segment and not (key == "from_version" and first and segment[key] is None):
            _integer(segment[key], f"{where}.{key}")
    if not isinstance(segment.get("rewound", True), bool):
        raise _BadField(f"{where}.rewound", f"expected true or false, got "
                                            f"{_shown(segment['rewound'])}")
    for key in ("note", "txn"):
        if key in segment:
            _text(segment[key], f"{where}.{key}", empty=True)
    if "sources" in segment:
        _versions(segment["sources"], f"{where}.sources")


def _check_segment_place(segment: dict, where: str, k: int, last: bool, cuts: list[int]) -> None:
    """Segment ``k`` (``last``: the run's newest) fits the run cut at ``cuts``: numbered ``k``,
    within the run's batches (the newest ending at its last batch), and only the newest, a
    continuation, may have its rewind pending, back to one of the run's cut points."""
    batches = len(cuts) - 1
    if segment["segment"] != k:
        raise _BadField(f"{where}.segment", f"expected {k} (its place in the list), got "
                                            f"{segment['segment']}")
    end = segment["first_batch"] + segment["batches"]
    if end > batches or (last and end != batches):
        raise _BadField(f"{where}.batches", f"batches {segment['first_batch']} to {end - 1} do "
                                            f"not {'end' if last else 'lie'} within the run's "
                                            f"{batches} batches")
    if segment.get("rewound", True) is False:
        if not last or k == 0:
            raise _BadField(f"{where}.rewound", "only the last segment of a continued run can "
                                                "be waiting for its rewind")
        if segment["rewind_seq"] != cuts[segment["first_batch"]]:
            raise _BadField(f"{where}.rewind_seq", f"expected {cuts[segment['first_batch']]} "
                                                   "(where its first batch starts), got "
                                                   f"{segment['rewind_seq']}")
        if not segment["rewind_seq"] <= segment["old_total"] <= cuts[-1]:
            raise _BadField(f"{where}.old_total", f"expected from {segment['rewind_seq']} to "
                                                  f"{cuts[-1]}, got {segment['old_total']}")

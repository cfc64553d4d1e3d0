"""Seeded fuzzing of the catalog loader and of operator construction: mutated recording and
query files (fields deleted or given the wrong YAML type, random and non-UTF-8 bytes) raise only
the project's errors, each within 5 s; and an unknown key in any mapping of a shipped file, nested
ones included, is refused naming its dotted field."""

from __future__ import annotations

import contextlib
import copy
import random
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.catalog import load_catalog
from engine.errors import RepriseError
from engine.registry import operator_for, reference_for
from engine.specs import CatalogError

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
RECORDINGS = {p.name: p.read_bytes() for p in sorted((SCHEMAS / "recordings").glob("*.yaml"))}
QUERIES = {p.name: p.read_bytes() for p in sorted((SCHEMAS / "queries").glob("*.yaml"))}
DOCUMENTS = 3_200
SEED = 15
#: Values of every YAML type, and values that are the right type but out of range.
ODD_VALUES: list[Any] = [
    None, True, False, 0, -1, 7, 2**70, 1.5, float("nan"), "", "x", "ts", "patient_id",
    "99999999999999999999d", "-5s", "0s", "1m", "count", "sum(", "é\u0000", [], [1], ["a", "b"],
    [[]], {}, {"a": 1}, {"v": {}}, {"type": "tumbling"}, {"by": "rows", "rows": 0},
    {"sql": 1, "type": []}, "atom(true, 1)", "SELECT", "iter(", "window", "qre", "spj",
]


def odd_value(rng: random.Random) -> Any:
    return copy.deepcopy(rng.choice(ODD_VALUES))


def paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside a YAML document."""
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            found += paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += paths(v, (*prefix, i))
    return found


def mutate_document(rng: random.Random, doc: Any) -> Any:
    """Delete, retype or rename one to three fields of ``doc`` (in place) and return it."""
    for _ in range(rng.randint(1, 3)):
        targets = paths(doc)
        if not targets:
            return odd_value(rng)
        path = rng.choice(targets)
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        last, action = path[-1], rng.random()
        if action < 0.3 and isinstance(parent, dict):
            del parent[last]
        elif action < 0.4 and isinstance(parent, dict):
            parent[rng.choice(["kind", "name", "input", "inputs", "key", "time", "bogus", 3,
                               None])] = parent.pop(last)
        else:
            parent[last] = odd_value(rng)
    return doc


def mutate_bytes(rng: random.Random, text: bytes) -> bytes:
    """Insert random or non-UTF-8 bytes, drop a span or cut the file short."""
    data = bytearray(text)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(data) + 1)
        action = rng.random()
        if action < 0.35:
            data[at:at] = bytes([rng.choice([0x80, 0xC3, 0xFF, 0xFE, 0xE2, 0x00])])
        elif action < 0.6:
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        elif action < 0.8:
            del data[at:at + rng.randint(1, 20)]
        else:
            data[at:at] = rng.choice([b":", b"- ", b"{", b"[", b"\n  ", b"'", b"&a ", b"*a"])
    return bytes(data)


def mutant(rng: random.Random, original: bytes) -> bytes:
    if rng.random() < 0.4:
        return mutate_bytes(rng, original)
    doc = mutate_document(rng, yaml.safe_load(original))
    return yaml.safe_dump(doc, allow_unicode=True).encode()


def exercise(root: Path) -> None:
    """Load the catalog at ``root``, then build every loadable query's operator and reference,
    and ask for every query file by name."""
    catalog = load_catalog(root)
    for name in [p.stem for p in (root / "queries").glob("*.yaml")]:
        try:
            query = catalog.query(name)
            op = operator_for(query, catalog.recordings)
            reference_for(query, catalog.recordings, op, [0, 0])
        except RepriseError:
            pass
    for name in [p.stem for p in (root / "recordings").glob("*.yaml")]:
        with contextlib.suppress(RepriseError):
            catalog.recording(name)


def test_mutated_catalog_files_raise_only_project_errors_quickly(tmp_path):
    rng = random.Random(SEED)
    escaped: list[str] = []
    slow: list[str] = []
    for i in range(DOCUMENTS):
        root = tmp_path / str(i)
        (root / "recordings").mkdir(parents=True)
        (root / "queries").mkdir()
        recordings, queries = dict(RECORDINGS), {}
        query = rng.choice(sorted(QUERIES))
        if rng.random() < 0.25:
            name = rng.choice(sorted(RECORDINGS))
            recordings[name] = mutant(rng, RECORDINGS[name])
            queries[query] = QUERIES[query]
        else:
            queries[query] = mutant(rng, QUERIES[query])
        for sub, files in (("recordings", recordings), ("queries", queries)):
            for name, data in files.items():
                (root / sub / name).write_bytes(data)
        started = time.perf_counter()
        try:
            exercise(root)
        except RepriseError:
            pass
        except Exception as exc:
            escaped.append(f"document {i} ({query}): {type(exc).__name__}: {exc}"[:300])
        if time.perf_counter() - started > 5:
            slow.append(f"document {i} ({query})")
    assert not escaped, f"{len(escaped)} internal errors, e.g.\n" + "\n".join(escaped[:15])
    assert not slow, slow


#: Mappings whose keys are names the file chooses (columns, streams, outputs, udafs); every
#: other mapping of a catalog file has a fixed set of fields.
NAMED_KEYS = {"columns", "inputs", "derive", "aggregates", "udafs", "timestamps"}


def fixed_mappings(node: Any, prefix: tuple = ()) -> list[tuple]:
    """The paths of the mappings with fixed fields in a catalog document (expectations are
    GX's: GX refuses their unknown arguments)."""
    if not isinstance(node, dict):
        return []
    found = [] if prefix and prefix[-1] in NAMED_KEYS else [prefix]
    return found + [p for k, v in node.items() if k != "expectations"
                    for p in fixed_mappings(v, (*prefix, k))]


def test_an_unknown_key_in_any_fixed_mapping_of_the_shipped_files_is_named(tmp_path):
    """Each shipped file, given a key ``zz_unknown`` in one of its mappings (nested ones too):
    loading it and building its operator fail with that dotted field, an unknown field."""
    cases = 0
    for folder, files in (("recordings", RECORDINGS), ("queries", QUERIES)):
        for file, data in files.items():
            original = yaml.safe_load(data)
            for path in fixed_mappings(original):
                doc = copy.deepcopy(original)
                node = doc
                for step in path:
                    node = node[step]
                node["zz_unknown"] = 1
                root = tmp_path / str(cases)
                for sub, texts in (("recordings", RECORDINGS), ("queries", QUERIES)):
                    (root / sub).mkdir(parents=True)
                    for name, text in texts.items():
                        (root / sub / name).write_bytes(text)
                (root / folder / file).write_text(yaml.safe_dump(doc))
                catalog = load_catalog(root)
                field = ".".join(map(str, (*path, "zz_unknown")))
                with pytest.raises(CatalogError) as info:
                    if folder == "recordings":
                        catalog.recording(Path(file).stem)
                    else:
                        operator_for(catalog.query(Path(file).stem), catalog.recordings)
                assert info.value.field == field and "unknown field" in info.value.problem, \
                    (file, str(info.value))
                cases += 1
    assert cases > len(RECORDINGS) + len(QUERIES)  # nested mappings were covered too

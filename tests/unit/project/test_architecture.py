"""The structure the contributing pages describe: layering, no import cycle, no family kind
named outside its folder, small modules."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("engine", "jobs", "orchestration")
FAMILY_FOLDERS = ("engine/qre/", "engine/spj/", "engine/windows/", "engine/select/")
#: The kinds of query and of window that only their family may switch on.
KINDS = ("qre", "spj", "window", "select", "tumbling", "sliding", "session")
MAX_LINES = 450


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports, anywhere in it (inside functions too)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            found |= {t for t in [target, *(f"{target}.{a.name}" for a in node.names)]
                      if t in modules}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
    return found - {name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def test_no_import_cycle():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_layers_import_one_way():
    wrong = []
    for name, path in _modules().items():
        text = path.read_text()
        if name.startswith("engine") and re.search(r"^\s*(from|import) (pyspark|dagster|jobs|"
                                                   r"orchestration)\b", text, re.M):
            wrong.append(name)
        if name.startswith("jobs") and re.search(r"^\s*(from|import) orchestration\b", text,
                                                 re.M):
            wrong.append(name)
    assert wrong == []


def test_no_family_kind_is_named_outside_its_folder():
    kinds = "|".join(KINDS)
    compared = re.compile(r"(==|!=|\bin)\s*[({\[]?\s*[\"'](" + kinds + r")[\"']")
    named = []
    for path in _modules().values():
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(FAMILY_FOLDERS) or relative == "engine/registry.py":
            continue
        named += [f"{relative}:{n}" for n, line in enumerate(path.read_text().splitlines(), 1)
                  if compared.search(line)]
    assert named == []


def test_modules_are_small_or_say_why():
    large = []
    for path in _modules().values():
        text = path.read_text()
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if text.count("\n") > MAX_LINES and "one piece" not in docstring:
            large.append(path.relative_to(ROOT).as_posix())
    assert large == []

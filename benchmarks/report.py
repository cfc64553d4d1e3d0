"""Write ``docs/benchmarks.md``: one table per benchmark from ``benchmarks/results/*.json``.

The benchmarks are the modules of this package that call :func:`benchmarks.results.record`;
one without a results file is listed as not yet measured. ``python -m benchmarks.report``
(``--results DIR``, ``--out FILE`` to read or write elsewhere).
"""

from __future__ import annotations

import argparse
import ast
import re
from dataclasses import dataclass
from pathlib import Path

from .results import ROOT, load, results_dir

PAGE = ROOT / "docs" / "benchmarks.md"
HEADER = """\
# Benchmarks

Each benchmark writes its latest result to `benchmarks/results/<name>.json` (the command, the
data size, the medians, the commit, the machine and its load); this page is generated from those
files by `python -m benchmarks.report`. How to run them and how to read them:
[Benchmarking](contributing/benchmarking.md).

The figures are medians over a benchmark's timed rounds (totals where a benchmark times a series,
such as the continuation benchmark's ten continuations), in seconds unless their name says
otherwise, on the machine named under each table; compare them only with figures from the same
machine at a similar load.
"""


@dataclass(frozen=True)
class Benchmark:
    """A benchmark module: its result name, module and the first line of its docstring."""

    name: str
    module: str
    summary: str


def summary_of(docstring: str) -> str:
    """A docstring's first line without its ``Benchmark:`` prefix, in markdown."""
    line = docstring.splitlines()[0] if docstring else ""
    line = re.sub(r"^Benchmark[^:]*:\s*", "", line).replace("``", "`").rstrip(".")
    return line[:1].upper() + line[1:]


def benchmarks(package: Path = ROOT / "benchmarks") -> list[Benchmark]:
    """The modules of ``package`` that record a result, by result name."""
    found = []
    for path in sorted(package.glob("*.py")):
        text = path.read_text()
        names = re.findall(r'\brecord\(\s*"(\w+)"', text)
        if not names:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        summary = summary_of(doc) or path.stem
        found += [Benchmark(name, f"benchmarks.{path.stem}", summary) for name in names]
    return sorted(found, key=lambda b: b.name)


def figure(value: object) -> str:
    """A figure for a table cell: floats to three significant decimals, ints with separators."""
    if isinstance(value, bool) or value is None:
        return "–" if value is None else str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.1f}"
    return str(value)


def table(bench: Benchmark, result: dict) -> str:
    """The section of one measured benchmark."""
    rows = [("command", f"`{result['command']}`"),
            ("data size", ", ".join(f"{k} {figure(v)}" for k, v in result["data_size"].items()))]
    rows += [(f"`{name}`", figure(value)) for name, value in result["medians"].items()]
    ratio = result.get("ratio")
    rows.append(("**ratio**", "–" if ratio is None else f"**{ratio:,.2f}**"))
    rows.append(("target", result.get("target") or "none (informative)"))
    m = result.get("machine", {})
    rows.append(("machine", f"{m.get('cores')} cores, {m.get('memory_gib')} GiB, Python "
                            f"{m.get('python')}, Java {m.get('java')}"))
    load_avg = result.get("load", {})
    rows.append(("load average (1 min)", f"{load_avg.get('before')} before, "
                                         f"{load_avg.get('after')} after"))
    lines = [f"## {bench.name}", "", f"{bench.summary} (`python -m {bench.module}`).", "",
             "| | |", "|---|---|"]
    lines += [f"| {key} | {value} |" for key, value in rows]
    lines += ["", f"Full result: `benchmarks/results/{bench.name}.json`.", ""]
    return "\n".join(lines)


def page(results: dict[str, dict], known: list[Benchmark]) -> str:
    """The whole page: a table per measured benchmark, then the ones not yet measured."""
    parts = [HEADER]
    missing = []
    for bench in known:
        if bench.name in results:
            parts.append(table(bench, results[bench.name]))
        else:
            missing.append(bench)
    if missing:
        parts.append("## Not yet measured\n")
        parts += [f"- **{b.name}**: {b.summary} (`python -m {b.module}`)" for b in missing]
        parts.append("")
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=PAGE)
    args = parser.parse_args()
    text = page(load(args.results or results_dir()), benchmarks())
    args.out.write_text(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

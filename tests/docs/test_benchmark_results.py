"""Benchmark results as data: ``benchmarks.results.record`` and the generated page."""

from __future__ import annotations

import json
import subprocess
import sys

from benchmarks import report, results


def test_record_writes_the_fields_and_the_page_shows_them(tmp_path, monkeypatch):
    monkeypatch.setenv(results.RESULTS_ENV, str(tmp_path))
    path = results.record("tumbling", command="python -m benchmarks.tumbling --events 10",
                          data_size={"events": 10}, medians={"replay_s": 1.5, "spark_s": 1.0},
                          ratio=1.5, target="ratio <= 2", extra={"buckets": 2},
                          load_before=0.25)
    assert path == tmp_path / "tumbling.json"
    saved = json.loads(path.read_text())
    assert saved["medians"] == {"replay_s": 1.5, "spark_s": 1.0}
    assert saved["ratio"] == 1.5 and saved["target"] == "ratio <= 2"
    assert saved["load"]["before"] == 0.25 and saved["load"]["after"] >= 0
    assert saved["machine"]["cores"] >= 1 and saved["machine"]["python"]
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=results.ROOT,
                          capture_output=True, text=True)
    assert saved["commit"] == (head.stdout.strip() or None)

    known = report.benchmarks()
    text = report.page(results.load(tmp_path), known)
    measured, _, missing = text.partition("## Not yet measured")
    assert "## tumbling" in measured and "`python -m benchmarks.tumbling --events 10`" in measured
    assert "ratio <= 2" in measured and "0.25 before" in measured
    others = {b.name for b in known} - {"tumbling"}
    assert others and all(f"**{name}**" in missing for name in others)


def test_every_make_bench_module_records_a_result():
    makefile = (results.ROOT / "Makefile").read_text()
    recipe = makefile.split("\nbench:", 1)[1].split("\n\n", 1)[0]  # the `make bench` lines
    bench_modules = {line.split("-m ")[1].split()[0] for line in recipe.splitlines()
                     if "-m benchmarks." in line}
    assert len(bench_modules) >= 10
    assert {b.module for b in report.benchmarks()} >= bench_modules


def test_outside_a_checkout_the_commit_is_null(tmp_path):
    assert results.git_commit(tmp_path) is None


def test_the_page_is_generated_from_the_committed_results(tmp_path):
    out = tmp_path / "benchmarks.md"
    subprocess.run([sys.executable, "-m", "benchmarks.report", "--out", str(out)],
                   cwd=results.ROOT, check=True, capture_output=True)
    assert out.read_text() == report.PAGE.read_text(), \
        "docs/benchmarks.md is stale: run python -m benchmarks.report"

"""Data-quality suites on replay outputs with Great Expectations (GX Core 1.x, pandas engine).

A query file lists expectations by their GX names with their arguments::

    expectations:
      - expect_column_values_to_be_between: {column: hr_avg, min_value: 20, max_value: 250}

Every suite also gets the defaults: the output has exactly the declared columns, and the key
columns are never null.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import pandas as pd

from engine.errors import RepriseError


class ExpectationError(RepriseError):
    """An expectation in a query file is unknown or malformed (names the file and the entry)."""


@dataclass(frozen=True)
class ExpectationResult:
    """One expectation's outcome."""

    expectation: str
    column: str | None
    success: bool
    observed: Any
    unexpected_count: int | None


@dataclass(frozen=True)
class SuiteResult:
    """The outcome of a whole suite."""

    success: bool
    results: list[ExpectationResult]

    @property
    def failed(self) -> list[ExpectationResult]:
        return [r for r in self.results if not r.success]


def _class_name(snake: str) -> str:
    return "".join(part.capitalize() for part in snake.split("_"))


def build_expectations(declared: list[Any], columns: list[str], not_null: list[str],
                       source: str = "<query>") -> list:
    """GX expectation objects for the declared list plus the schema and non-null defaults."""
    import great_expectations as gx

    built = [gx.expectations.ExpectTableColumnsToMatchSet(column_set=columns, exact_match=True)]
    built += [gx.expectations.ExpectColumnValuesToNotBeNull(column=c) for c in not_null]
    for i, entry in enumerate(declared):
        if not isinstance(entry, dict) or len(entry) != 1:
            raise ExpectationError(f"{source}: field 'expectations[{i}]': expected one "
                                   f"'expect_...: {{arguments}}' mapping, got {entry!r}")
        (name, kwargs), = entry.items()
        cls = getattr(gx.expectations, _class_name(str(name)), None)
        if cls is None or not str(name).startswith("expect_"):
            raise ExpectationError(f"{source}: field 'expectations[{i}]': unknown expectation "
                                   f"{name!r}")
        try:
            built.append(cls(**(kwargs or {})))
        except Exception as exc:  # pydantic validation of the arguments
            raise ExpectationError(f"{source}: field 'expectations[{i}]' ({name}): {exc}"
                                   ) from exc
    return built


def run_suite(frame: pd.DataFrame, expectations: list, name: str) -> SuiteResult:
    """Validate ``frame`` against ``expectations`` in an ephemeral GX context."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = gx.data_context.types.base.ProgressBarsConfig(
        globally=False)
    batch = (context.data_sources.add_pandas(name=f"{name}_source")
             .add_dataframe_asset(name=name)
             .add_batch_definition_whole_dataframe("whole")
             .get_batch(batch_parameters={"dataframe": frame}))
    suite = context.suites.add(gx.ExpectationSuite(name=name, expectations=expectations))
    outcome = batch.validate(suite)
    results = []
    for r in outcome.results:
        config = r.expectation_config
        results.append(ExpectationResult(
            expectation=config.type, column=config.kwargs.get("column"), success=bool(r.success),
            observed=r.result.get("observed_value"),
            unexpected_count=r.result.get("unexpected_count")))
    return SuiteResult(success=bool(outcome.success), results=results)

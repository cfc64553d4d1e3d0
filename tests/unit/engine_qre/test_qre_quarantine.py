"""Events a QRE cannot evaluate go to the quarantine output with the key, arrival number and
reason, and the reference applies the same rule; predicates are type-checked at load."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.catalog import parse_query, parse_recording
from engine.operator import REASON, SEQ, TIME, run_batches
from engine.qre.keyed import QreOperator
from engine.qre.query_spec import parse_qre_query
from engine.qre.stream_reference import qre_reference
from engine.specs import CatalogError

VITALS = parse_recording({"name": "vitals", "key": "patient_id", "time": "ts",
                          "columns": {"patient_id": "string", "ts": "timestamp",
                                      "heart_rate": "int", "spo2": "int"}})
EVENTS = pd.DataFrame({"patient_id": ["a", "b", "a", "a", "b"], TIME: [1, 2, 3, 4, 5],
                       SEQ: [0, 1, 2, 3, 4], "heart_rate": [90, 95, 97, 80, 70],
                       "spo2": [97, 95, 97, 99, 98]})


def spec(text: str, output: str = "every", lateness: str = "0s"):
    query = parse_query({"name": "q", "kind": "qre", "input": "vitals", "output": output,
                         "lateness": lateness, "query": text}, {"vitals": VITALS},
                        source="q.yaml")
    return parse_qre_query(query, VITALS)


def test_the_division_by_zero_of_every_event_quarantines_them_all():
    op = QreOperator(spec("atom(true, 100 / (heart_rate - heart_rate))"))
    result = op.step(op.init(), EVENTS)
    assert result.output.empty
    assert result.rejected[["patient_id", SEQ]].values.tolist() == [
        ["a", 0], ["a", 2], ["a", 3], ["b", 1], ["b", 4]]
    assert set(result.rejected[REASON]) == {
        "the operation '(100 / (heart_rate - heart_rate))' failed: ZeroDivisionError: "
        "division by zero"}


@pytest.mark.parametrize("output", ["every", "changes", "final"])
@pytest.mark.parametrize("lateness", ["0s", "1s"])
def test_only_the_failing_events_are_quarantined_and_the_reference_agrees(output, lateness):
    qre = spec("iter(eps(0), atom(true, 100 // (heart_rate - spo2)), +)", output, lateness)
    out, _, _, _ = run_batches(QreOperator(qre), [EVENTS.iloc[:2], EVENTS.iloc[2:]])
    rejected = pd.concat([QreOperator(qre).step(QreOperator(qre).init(), b).rejected
                          for b in (EVENTS.iloc[:2], EVENTS.iloc[2:])])
    assert rejected[SEQ].tolist() == [1, 2]  # heart_rate == spo2
    assert rejected[REASON].str.contains("ZeroDivisionError").all()
    reference, late, reference_rejected = qre_reference(EVENTS, qre)
    assert reference_rejected == [1, 2] and late == []
    assert sorted(out["value_json"]) == sorted(reference["value_json"])
    expected = {"every": ["-15", "-21", "-4"], "changes": ["-15", "-21", "-4"],
                "final": ["-21", "-4"]}[output]
    assert sorted(out["value_json"]) == sorted(expected)  # a: 100 // -7 + 100 // -19; b: -4


def test_a_failing_predicate_quarantines_the_event():
    qre = spec("iter(eps(0), atom(100 // (heart_rate - 97) > 1, 1) | "
               "atom(100 // (heart_rate - 97) <= 1, 0), +)")
    result = QreOperator(qre).step(QreOperator(qre).init(), EVENTS)
    assert result.rejected[SEQ].tolist() == [2]
    assert result.rejected[REASON].iloc[0].startswith(
        "the predicate '((100 // (heart_rate - 97)) > 1)' cannot be evaluated: ZeroDivisionError")
    assert qre_reference(EVENTS, qre)[2] == [2]


def test_a_predicate_that_cannot_fail_costs_no_check():
    op = QreOperator(spec("iter(eps(0), atom(heart_rate > 90, heart_rate - spo2) | "
                          "atom(heart_rate <= 90, 0), +)"))
    assert op.checks.atoms and not op.checks.risky


@pytest.mark.parametrize("text, problem", [
    ("atom(heart_rate, 1)", r"a predicate must be a bool, but it has type num in the predicate "
                            r"'heart_rate' of atom\(heart_rate, 1\) \(column 'heart_rate' is "
                            r"int\)"),
    ("atom(heart_rate + 1 and spo2 > 90, 1)", r"expected bool but '\(heart_rate \+ 1\)' has "
                                              r"type num"),
    ("atom(patient_id > 3, 1)", "cannot compare str with num"),
])
def test_predicates_are_type_checked_against_the_recording(text, problem):
    with pytest.raises(CatalogError, match=r"q.yaml: field 'query': .*" + problem):
        spec(text)


@pytest.mark.parametrize("output", ["every", "changes", "final"])
def test_an_operation_failing_on_combined_values_is_reported_as_an_error_output(output):
    """No single event is at fault (each reading is fine): the output is an error row."""
    qre = spec("iter(eps(0), atom(true, heart_rate - spo2), (a, d) -> a + 100 // (d + 7))",
               output)
    out, _, _, _ = run_batches(QreOperator(qre), [EVENTS.iloc[:3], EVENTS.iloc[3:]])
    reference, _, rejected = qre_reference(EVENTS, qre)
    assert rejected == []
    error = '{"error": "the operation \'(a, d) -> (a + (100 // (d + 7)))\' failed: ' \
            'ZeroDivisionError: integer division or modulo by zero"}'
    by_key = {k: group["value_json"].tolist() for k, group in out.groupby("patient_id")}
    expected = {"every": {"a": [error, error, error], "b": ["14", "9"]},
                "changes": {"a": [error], "b": ["14", "9"]},
                "final": {"a": [error], "b": ["9"]}}[output]
    assert by_key == expected  # a: 90 - 97 + 7 == 0 fails the fold and stays failed;
    # b: 100 // 7 + 100 // -21
    assert sorted(reference["value_json"]) == sorted(out["value_json"])
    assert out.loc[out["value_json"] == error, "value"].isna().all()

"""Mode choice: synopses for bounded queries, the full history only when allowed or asked for."""

import pytest

from engine.spj import SpjError, analyze
from engine.spj.modes import FULL_HISTORY, SYNOPSIS, choose_mode, synopsis_source

ST = {"S": ["A", "B", "C"], "T": ["D", "E"]}
BOUNDED = "SELECT S.A FROM S, T WHERE S.A = T.D AND S.A > 10 AND T.D < 20"
UNBOUNDED = "SELECT S.A FROM S, T WHERE S.B < T.D AND S.A = 10"


def test_bounded_query_runs_on_synopses_unless_full_history_is_asked_for() -> None:
    a = analyze(BOUNDED, ST)
    source = synopsis_source(a)
    assert not isinstance(source, str) and source[2] == a.synopsis.units
    assert choose_mode(a, source, None, False) == SYNOPSIS
    assert choose_mode(a, source, FULL_HISTORY, False) == FULL_HISTORY


def test_unbounded_query_is_refused_with_its_violation_unless_allowed() -> None:
    a = analyze(UNBOUNDED, ST)
    source = synopsis_source(a)
    assert isinstance(source, str) and "C3" in source
    with pytest.raises(SpjError, match=r"not bounded-memory computable.*; allow_unbounded=True "
                                       "runs it on the full history"):
        choose_mode(a, source, None, False)
    assert choose_mode(a, source, None, True) == FULL_HISTORY
    with pytest.raises(SpjError, match="C3"):
        choose_mode(a, source, SYNOPSIS, True)

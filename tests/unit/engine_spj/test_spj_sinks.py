"""Output sinks: bag counts, set rows emitted once, aggregate rows only for changed groups."""

from engine.spj.aggregates import AggOp
from engine.spj.parse import parse
from engine.spj.sinks import AggSink, BagSink, SetSink
from engine.spj.state import Entry


def test_bag_sink_sums_multiplicities_per_value() -> None:
    sink = BagSink(["S.A", "count"], (0,))
    for env, mult in (([2, 0], 3), ([1, 5], 1), ([2, 9], 2)):
        sink.add(env, [], mult)
    assert sink.rows() == [{"S.A": 1, "count": 1}, {"S.A": 2, "count": 5}]


def test_set_sink_emits_each_row_once_across_batches() -> None:
    emitted: set[tuple] = {(1,)}
    sink = SetSink(["S.A"], (0,), emitted)
    assert sink.known([1]) and not sink.known([2])
    sink.add([2], [], 1)
    sink.add([2], [], 1)
    sink.add([1], [], 1)
    assert sink.rows() == [{"S.A": 2}] and emitted == {(1,), (2,)}


def test_aggregate_sink_reports_groups_whose_values_changed() -> None:
    q = parse("SELECT S.A, MAX(S.B) FROM S GROUP BY S.A", {"S": ["A", "B"]})
    groups = {(1,): [7]}
    sink = AggSink(q, ["S.A", "MAX(S.B)"], (0,), [AggOp("MAX", 0, 1)], groups, False)
    sink.add([1, 3], [Entry((1, 3), 1, None)], 1)  # 3 < 7: group 1 unchanged
    sink.add([2, 4], [Entry((2, 4), 1, None)], 1)  # new group
    assert sink.rows() == [{"S.A": 2, "MAX(S.B)": 4}] and groups == {(1,): [7], (2,): [4]}

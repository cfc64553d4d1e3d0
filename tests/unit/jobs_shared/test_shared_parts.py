"""How a shared job splits its queries into parts (one Spark task each): every query in exactly
one part, the queries of one pane group or of one cluster's computed derived columns together
(queries behind one residual predicate may be apart: each part evaluates it), sizes balanced."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.filtered import Passing
from engine.predicate import TRUE
from engine.windows.pane_share import PaneShare
from jobs.shared.shared_derive import ClusterDerive
from jobs.shared.shared_run import Member, parts


def _members(links: list[tuple[int | None, int | None]], filter_of: int | None = None
             ) -> list[Member]:
    """Members ``q0, q1, ...``; member i takes share ``links[i][0]`` and computes derived columns
    ``links[i][1]`` (None: none), shared by the members naming the same number; every member
    has residual filter ``filter_of`` (None: none), one shared by all of them."""
    shares = {i: PaneShare(60_000_000, "k", 0, [], []) for i, _ in links if i is not None}
    derives = {j: ClusterDerive({}, (), {}) for _, j in links if j is not None}
    passing = None if filter_of is None else Passing(TRUE)
    return [Member(f"q{n}", None, TRUE,  # type: ignore[arg-type]  # parts reads no plan
                   shares.get(i) if i is not None else None, passing,
                   derives.get(j) if j is not None else None, computes=j is not None)
            for n, (i, j) in enumerate(links)]


def test_singles_are_spread_evenly_in_member_order():
    members = _members([(None, None)] * 7)
    split = parts(members, 3)
    assert [len(p) for p in split] == [3, 2, 2]
    assert sorted(m.name for p in split for m in p) == sorted(m.name for m in members)
    for part in split:
        names = [m.name for m in part]
        assert names == sorted(names, key=lambda n: int(n[1:]))


def test_a_member_linking_two_groups_keeps_both_groups_in_one_part():
    # q0, q1 share panes; q2 shares derived columns with q3 and the panes of q0 and q1
    members = _members([(0, None), (0, None), (0, 1), (None, 1), (None, None), (None, None)])
    split = parts(members, 2)
    together = next(p for p in split if members[0] in p)
    assert {m.name for m in members[:4]} <= {m.name for m in together}


def test_fewer_members_than_parts_gives_one_part_each():
    members = _members([(None, None), (None, None)])
    assert [[m.name for m in p] for p in parts(members, 4)] == [["q0"], ["q1"]]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 3)),
                          st.one_of(st.none(), st.integers(0, 3))), min_size=1, max_size=20),
       st.integers(1, 4))
def test_parts_cover_every_member_once_and_keep_sharers_together(links, count):
    members = _members(links)
    split = parts(members, count)
    assert 1 <= len(split) <= count
    names = [m.name for p in split for m in p]
    assert sorted(names) == sorted(m.name for m in members)
    part_of = {m.name: i for i, p in enumerate(split) for m in p}
    for a in members:
        for b in members:
            if (a.share is not None and a.share is b.share) or (
                    a.derive is not None and a.derive is b.derive):
                assert part_of[a.name] == part_of[b.name]


def test_one_residual_filter_does_not_tie_its_queries_to_one_part():
    members = _members([(None, None)] * 4, filter_of=0)
    assert [len(p) for p in parts(members, 2)] == [2, 2]


def test_parts_balance_the_estimated_work_not_the_member_count():
    # q0-q2 share panes and weigh 9 together; q3-q6 weigh 1 each
    members = _members([(0, None)] * 3 + [(None, None)] * 4)
    split = parts(members, 2, lambda unit: 9.0 if unit[0].share is not None else len(unit))
    assert [[m.name for m in p] for p in split] == [["q0", "q1", "q2"], ["q3", "q4", "q5", "q6"]]
    by_count = parts(members, 2)
    assert sorted(len(p) for p in by_count) == [3, 4]
    assert [m.name for m in by_count[0]] != ["q0", "q1", "q2"]

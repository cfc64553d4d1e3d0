"""What the planner knows of a query: its :class:`SharingView` (built by the query's family,
see :meth:`engine.family.QueryFamily.sharing_view`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..predicate import TRUE, Pred

#: Aggregate -> the pane partial states it is finalised from. ``avg`` needs the count of the
#: column's non-null values, never ``count(*)``: NULLs are not part of the mean.
PARTIALS: dict[str, tuple[str, ...]] = {
    "count": ("count",), "sum": ("sum",), "avg": ("sum", "count"), "min": ("min",),
    "max": ("max",),
}
#: Window kinds whose windows are unions of tumbling panes: time windows (tumbling, sliding,
#: in microseconds) and count windows (in events). Other kinds (sessions) never share panes.
PANE_KINDS = ("time", "count")


@dataclass(frozen=True, order=True)
class AggregateView:
    """One output aggregate ``name = fn(column)`` (``column`` None: ``count()``)."""

    name: str
    fn: str
    column: str | None = None

    @property
    def decomposable(self) -> bool:
        """Whether the aggregate is computed exactly from disjoint panes' partial states."""
        return self.fn in PARTIALS

    @property
    def states(self) -> tuple[str, ...]:
        """The partial states (``count(*)``, ``count(c)``, ``sum(c)``, ``min(c)``, ``max(c)``)
        the aggregate is finalised from; empty for a holistic aggregate."""
        if not self.decomposable:
            return ()
        arg = "*" if self.column is None else self.column
        return tuple(f"{s}({arg})" for s in PARTIALS[self.fn])


@dataclass(frozen=True, order=True)
class WindowView:
    """A window: ``kind`` time (``size``/``slide`` in microseconds, windows start at multiples
    of the slide), count (``size``/``slide`` in events: every ``slide`` events the last
    ``size``) or any other kind (``other``: never pane-shared)."""

    kind: str
    size: int
    slide: int
    #: The event-time column (time windows) and allowed lateness, emission mode: queries share
    #: panes only when they agree on all three.
    time: str = ""
    lateness_us: int = 0
    emit: str = "close"


@dataclass(frozen=True, order=True)
class DerivedColumn:
    """One derived column of a query as its cluster's stream carries it: ``stream`` its column
    name in the stream, ``name`` the query's name for it, ``sql`` its definition (canonical
    Spark SQL, the derived columns it reads inlined), ``type`` its catalog type,
    ``partition`` the column its window functions are partitioned by (None without any)."""

    stream: str
    name: str
    sql: str
    type: str
    partition: str | None
    digest: str


@dataclass(frozen=True)
class SharingView:
    """The planner's view of a query on one recording.

    ``where``: the row predicate (TRUE for none); ``columns``: every input column the query
    reads (its ``where`` included); for window queries ``window``, ``key`` (None: one group),
    ``aggregates`` and ``having`` (the predicate over aggregate outputs, or None);
    ``derived``: its derived columns, which ``where``, ``columns``, ``key`` and ``aggregates``
    name by their stream names (:func:`engine.sharing.derived.with_derived`)."""

    name: str
    columns: frozenset[str]
    where: Pred = TRUE
    window: WindowView | None = None
    key: str | None = None
    aggregates: tuple[AggregateView, ...] = ()
    having: Pred | None = None
    #: The recording the query reads (queries of one plan read the same recording).
    recording: str = ""
    derived: tuple[DerivedColumn, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", frozenset(self.columns) | self.where.columns)

    @property
    def pane_eligible(self) -> bool:
        """Whether the query's windows can be assembled from shared panes: a time or count
        window emitted at close, every aggregate decomposable."""
        w = self.window
        return (w is not None and w.kind in PANE_KINDS and w.emit == "close"
                and bool(self.aggregates) and all(a.decomposable for a in self.aggregates))

    @property
    def states(self) -> frozenset[str]:
        return frozenset(s for a in self.aggregates for s in a.states)

"""The ``kind: window`` query spec: window shape, named aggregates, user-declared aggregates and
the emission mode (the syntax is documented in ``engine/windows/README.md``; the query block is
read by :mod:`engine.windows.query_block`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..predicate import Pred
from .udaf import Udaf

#: Window kind -> the shape fields of :class:`WindowSpec` it sets.
SHAPE = {"tumbling": ("size_us",), "sliding": ("size_us", "slide_us"),
         "session": ("gap_us",), "count": ("size_events", "every_events")}
#: Window kind -> the fields of its ``query.window`` mapping.
WINDOW_FIELDS = {"tumbling": ("type", "size"), "sliding": ("type", "size", "slide"),
                 "session": ("type", "gap"), "count": ("type", "size", "every")}
WINDOW_KINDS = tuple(SHAPE)
#: The longest window size, slide, gap and lateness: 100 years (36500d). Event times are int64
#: microseconds; with every duration below 2^52 us, window ends, watermarks and slice arithmetic
#: on event times of any real date (years 1 to 9999, below 2^58 us) stay far inside int64.
MAX_DURATION_US = 36_500 * 86_400_000_000
#: The most events a count window may hold or step over: a step lays out ``size`` cells per key
#: that releases events, and the state keeps ``size - 1`` events per key.
MAX_EVENTS = 1_000_000
EMIT_MODES = ("close", "updates")
NUMERIC = ("int", "double")
#: Column types the value-selecting and distinct-counting aggregates accept.
DISCRETE = ("int", "double", "string")
#: Aggregate -> (argument kinds, column types accepted). ``column?``: an optional column.
SIGNATURES: dict[str, tuple[tuple[str, ...], tuple[str, ...] | None]] = {
    "count": (("column?",), None),
    "sum": (("column",), NUMERIC), "avg": (("column",), NUMERIC),
    "min": (("column",), NUMERIC), "max": (("column",), NUMERIC),
    "stddev": (("column",), NUMERIC), "variance": (("column",), NUMERIC),
    "stddev_pop": (("column",), NUMERIC), "var_pop": (("column",), NUMERIC),
    "first": (("column",), DISCRETE), "last": (("column",), DISCRETE),
    "argmin": (("column", "column"), DISCRETE), "argmax": (("column", "column"), DISCRETE),
    "count_distinct": (("column",), DISCRETE), "approx_count_distinct": (("column",), DISCRETE),
    "median": (("column",), NUMERIC), "percentile": (("column", "fraction"), NUMERIC),
}
AGGREGATES = tuple(SIGNATURES)


@dataclass(frozen=True)
class Aggregate:
    """``name = fn(column[, by | p])``; ``column`` is None for ``count()``.

    ``by`` is the ordering column of argmin/argmax, ``p`` the fraction of percentile (0.5 for
    median); ``fn`` is the name of a user-declared aggregate for udafs.
    """

    name: str
    fn: str
    column: str | None
    by: str | None = None
    p: float | None = None


@dataclass(frozen=True)
class WindowSpec:
    """A per-key window aggregate; each kind reads its own shape fields (``kind`` tumbling:
    ``size_us``; sliding: ``size_us`` and ``slide_us``; session: ``gap_us``; count:
    ``size_events`` and ``every_events``), all positive, and leaves the others 0."""

    key: str
    lateness_us: int
    aggregates: tuple[Aggregate, ...]
    value_types: dict[str, str]  # column read by an aggregate -> recording type
    key_type: str
    kind: str = "tumbling"  # tumbling | sliding | session | count
    size_us: int = 0  # tumbling, sliding: window length
    slide_us: int = 0  # sliding: distance between window starts
    gap_us: int = 0  # session: the least distance between two sessions' events
    size_events: int = 0  # count: events per window
    every_events: int = 0  # count: events between emissions
    udafs: tuple[Udaf, ...] = ()
    emit: str = "close"  # close | updates (early rows for open windows, column ``final``)
    #: ``having``: a predicate over the aggregates' output names; only rows passing it are
    #: emitted, or None.
    having: Pred | None = None

    def __post_init__(self) -> None:
        if self.kind not in SHAPE:
            raise ValueError(f"unknown window kind {self.kind!r} (expected {', '.join(SHAPE)})")
        wanted = SHAPE[self.kind]
        for name in ("size_us", "slide_us", "gap_us", "size_events", "every_events"):
            value = getattr(self, name)
            if (value > 0) != (name in wanted) or value < 0:
                raise ValueError(f"a {self.kind} window has {' and '.join(wanted)} (positive) "
                                 f"and no other shape field, got {name}={value!r}")
        if self.slide_us > self.size_us or self.every_events > self.size_events:
            raise ValueError("a window's slide (every) may not exceed its size: events between "
                             "two windows would belong to none")

    @property
    def slide(self) -> int:
        """The distance between window starts of a tumbling or sliding window."""
        return self.slide_us or self.size_us

    @property
    def value_columns(self) -> list[str]:
        return sorted(self.value_types)

    def udaf(self, name: str) -> Udaf | None:
        return next((u for u in self.udafs if u.name == name), None)

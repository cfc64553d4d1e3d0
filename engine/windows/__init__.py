"""Window aggregates over event time and over event counts."""

from .base import WindowOperator
from .count import CountWindow
from .query_block import parse_window_query
from .reference import window_reference, window_updates_reference
from .session import SessionWindow
from .sliding import SlidingWindow
from .spec import Aggregate, WindowSpec
from .tumbling import TumblingWindow

__all__ = ["Aggregate", "CountWindow", "SessionWindow", "SlidingWindow", "TumblingWindow",
           "WindowOperator", "WindowSpec", "parse_window_query", "window_reference",
           "window_updates_reference"]

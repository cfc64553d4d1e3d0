"""Window aggregates over event time."""

from .count import CountWindow
from .reference import window_reference, window_updates_reference
from .session import SessionWindow
from .sliding import SlidingWindow
from .spec import Aggregate, WindowSpec, parse_window_query
from .tumbling import TumblingWindow

__all__ = ["Aggregate", "CountWindow", "SessionWindow", "SlidingWindow", "TumblingWindow",
           "WindowSpec", "parse_window_query", "window_reference", "window_updates_reference"]

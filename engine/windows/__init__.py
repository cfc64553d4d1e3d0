"""Window aggregates over event time."""

from .reference import tumbling_reference
from .spec import Aggregate, WindowSpec, parse_window_query
from .tumbling import TumblingWindow

__all__ = ["Aggregate", "TumblingWindow", "WindowSpec", "parse_window_query",
           "tumbling_reference"]

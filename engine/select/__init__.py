"""Continuous selection and projection: the matching rows of one recording, in arrival order."""

from .operator import SelectOperator
from .reference import select_reference
from .spec import SelectSpec, parse_select_query

__all__ = ["SelectOperator", "SelectSpec", "parse_select_query", "select_reference"]

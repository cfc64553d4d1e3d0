"""The math functions of the expression language, per language that admits them: name ->
(arity, implementation). A parser is given the arities (``arities``), an evaluator the
implementations."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

Functions = Mapping[str, tuple[int, Callable[..., Any]]]

#: QRE expressions: Python semantics on plain values.
QRE_FUNCTIONS: Functions = {"abs": (1, abs), "min": (2, min), "max": (2, max)}

#: UDAF expressions: elementwise over numpy arrays (float64), with the QRE functions and more.
UDAF_FUNCTIONS: Functions = {
    "abs": (1, np.abs), "min": (2, np.minimum), "max": (2, np.maximum), "sqrt": (1, np.sqrt),
    "exp": (1, np.exp), "log": (1, np.log), "pow": (2, np.power)}


def arities(functions: Functions) -> dict[str, int]:
    """The number of arguments of each function of ``functions``."""
    return {name: arity for name, (arity, _) in functions.items()}

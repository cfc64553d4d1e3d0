"""Quantitative regular expressions: combinators, text syntax, reference and incremental engines.

See ``engine/qre/README.md`` for the textual syntax.
"""

from ..expr.values import UNIT
from .build import apply, atom, bottom, combine, eps, iterate, split
from .compiled import CompiledEvaluator, CompiledState
from .derivative import DerivativeEvaluator, DerivativeState
from .errors import EvaluationError, MissingFieldError, QREError, QRESyntaxError, QRETypeError
from .evaluator import Evaluator, State, evaluate, run
from .hierarchical import HierarchicalEvaluator, HierarchicalState
from .kernel import Kernel, KernelRun, compile_kernel, kernel_for, kernel_reason
from .kernel_cache import configure_cache
from .kernel_states import KernelStates
from .reference import reference, reference_multiset, reference_poly
from .strong import strongly_typed
from .sugar import any_items, average, count, plus, suffix, total
from .terms import Term, choice
from .text import parse
from .values import Failure, Outcome

__all__ = [
    "UNIT",
    "CompiledEvaluator",
    "CompiledState",
    "DerivativeEvaluator",
    "DerivativeState",
    "EvaluationError",
    "Evaluator",
    "Failure",
    "HierarchicalEvaluator",
    "HierarchicalState",
    "Kernel",
    "KernelRun",
    "KernelStates",
    "MissingFieldError",
    "Outcome",
    "QREError",
    "QRESyntaxError",
    "QRETypeError",
    "State",
    "Term",
    "any_items",
    "apply",
    "atom",
    "average",
    "bottom",
    "choice",
    "combine",
    "compile_kernel",
    "configure_cache",
    "count",
    "eps",
    "evaluate",
    "iterate",
    "kernel_for",
    "kernel_reason",
    "parse",
    "plus",
    "reference",
    "reference_multiset",
    "reference_poly",
    "run",
    "split",
    "strongly_typed",
    "suffix",
    "total",
]

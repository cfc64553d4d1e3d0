"""Row predicates in SQL syntax: parsing with sqlglot, a canonical hashable form, vectorised and
row-at-a-time evaluation with SQL's three-valued NULL semantics, simplifying AND/OR and a sound
implication test (the syntax and rules are in ``engine/sharing/README.md``)."""

from .form import FALSE, TRUE, And, Const, InSet, IsNull, Or, Pred
from .logic import conjoin, disjoin, implies
from .parse import MAX_DEPTH, PredicateError, parse_predicate

__all__ = ["FALSE", "MAX_DEPTH", "TRUE", "And", "Const", "InSet", "IsNull", "Or", "Pred",
           "PredicateError", "conjoin", "disjoin", "implies", "parse_predicate"]

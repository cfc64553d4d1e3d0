"""Naive denotational evaluators, independent of the derivative engines.

``reference_multiset`` is the literal multiset semantics (Fig. 2 of the paper), memoised on
(node, i, j); it is exponential and meant for short streams. ``reference_poly`` computes the
same table in the three-valued domain {none, one value, many}, which is a homomorphic image of
multisets for every operation the semantics uses, so it is exact for the unambiguous semantics
in O(|f|·n³) time. Neither uses the cached E of terms nor any derivative code.
"""

from __future__ import annotations

from typing import Any

from .terms import Apply, Atom, Bottom, Choice, Combine, Eps, Iter, Split, Term, check_item
from .values import AMBIGUOUS, NONE, Outcome


def reference_multiset(query: Term, items: list[Any]) -> list[list[Any]]:
    """``[[query]]`` on every prefix of ``items`` (multisets as lists, multiplicity kept)."""
    for item in items:
        check_item(query, item)
    memo: dict[tuple[int, int, int], list[Any]] = {}

    def sem(node: Term, i: int, j: int) -> list[Any]:
        key = (id(node), i, j)
        if key not in memo:
            memo[key] = _literal(node, i, j)
        return memo[key]

    def _literal(node: Term, i: int, j: int) -> list[Any]:
        if isinstance(node, Bottom):
            return []
        if isinstance(node, Eps):
            return [node.value] if i == j else []
        if isinstance(node, Atom):
            ok = j == i + 1 and node.pred(items[i])
            return [node.op(items[i])] if ok else []
        if isinstance(node, Choice):
            return sem(node.left, i, j) + sem(node.right, i, j)
        if isinstance(node, Split):
            return [node.op(a, b) for k in range(i, j + 1)
                    for a in sem(node.left, i, k) for b in sem(node.right, k, j)]
        if isinstance(node, Iter):
            return sem(node.init, i, j) + [node.op(b, a) for k in range(i, j)
                                           for b in sem(node, i, k) for a in sem(node.body, k, j)]
        if isinstance(node, Apply):
            return [node.op(a) for a in sem(node.sub, i, j)]
        if isinstance(node, Combine):
            return [node.op(a, b) for a in sem(node.left, i, j) for b in sem(node.right, i, j)]
        raise TypeError(f"not a query: {node!r}")

    return [sem(query, 0, j) for j in range(len(items) + 1)]


def reference(query: Term, items: list[Any]) -> list[Outcome]:
    """Unambiguous output on every prefix (empty prefix first), from the literal semantics."""
    return [Outcome.of(outs) for outs in reference_multiset(query, items)]


class _Many:
    def __repr__(self) -> str:
        return "MANY"


MANY: Any = _Many()
Abstract = Any  # () = no output, (v,) = exactly one output v, MANY = two or more


def _union(a: Abstract, b: Abstract) -> Abstract:
    if a == ():
        return b
    if b == ():
        return a
    return MANY


def _lift2(op: Any, a: Abstract, b: Abstract) -> Abstract:
    if a == () or b == ():
        return ()
    if a is MANY or b is MANY:
        return MANY
    return (op(a[0], b[0]),)


def reference_poly(query: Term, items: list[Any]) -> list[Outcome]:
    """Unambiguous output on every prefix in polynomial time (three-valued DP over intervals)."""
    for item in items:
        check_item(query, item)
    n = len(items)
    tables: dict[int, list[list[Abstract]]] = {}
    for node in _postorder(query):
        if id(node) not in tables:
            tables[id(node)] = _table(node, items, n, tables)
    top = tables[id(query)][0]
    out = []
    for j in range(n + 1):
        value = top[j]
        if value is MANY:
            out.append(AMBIGUOUS)
        else:
            out.append(Outcome.single(value[0]) if value else NONE)
    return out


def _postorder(root: Term) -> list[Term]:
    order: list[Term] = []
    stack: list[tuple[Term, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in node.children())
    return order


def _table(node: Term, items: list[Any], n: int,
           tables: dict[int, list[list[Abstract]]]) -> list[list[Abstract]]:
    """T[i][j] = abstract [[node]](items[i:j]) for 0 <= i <= j <= n (other cells unused)."""
    table: list[list[Abstract]] = [[()] * (n + 1) for _ in range(n + 1)]
    if isinstance(node, Eps):
        for i in range(n + 1):
            table[i][i] = (node.value,)
    elif isinstance(node, Atom):
        for i in range(n):
            if node.pred(items[i]):
                table[i][i + 1] = (node.op(items[i]),)
    elif isinstance(node, Choice):
        left, right = tables[id(node.left)], tables[id(node.right)]
        for i in range(n + 1):
            for j in range(i, n + 1):
                table[i][j] = _union(left[i][j], right[i][j])
    elif isinstance(node, Split):
        left, right = tables[id(node.left)], tables[id(node.right)]
        for i in range(n + 1):
            for j in range(i, n + 1):
                acc: Abstract = ()
                for k in range(i, j + 1):
                    acc = _union(acc, _lift2(node.op, left[i][k], right[k][j]))
                    if acc is MANY:
                        break
                table[i][j] = acc
    elif isinstance(node, Iter):
        init, body = tables[id(node.init)], tables[id(node.body)]
        for i in range(n + 1):
            row = table[i]
            for j in range(i, n + 1):
                acc = init[i][j]
                for k in range(i, j):
                    if acc is MANY:
                        break
                    acc = _union(acc, _lift2(node.op, row[k], body[k][j]))
                row[j] = acc
    elif isinstance(node, Apply):
        sub = tables[id(node.sub)]
        for i in range(n + 1):
            for j in range(i, n + 1):
                value = sub[i][j]
                table[i][j] = (node.op(value[0]),) if value not in ((), MANY) else value
    elif isinstance(node, Combine):
        left, right = tables[id(node.left)], tables[id(node.right)]
        for i in range(n + 1):
            for j in range(i, n + 1):
                table[i][j] = _lift2(node.op, left[i][j], right[i][j])
    elif not isinstance(node, Bottom):
        raise TypeError(f"not a query: {node!r}")
    return table

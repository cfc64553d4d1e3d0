"""Evaluating the events a keyed QRE operator releases: one run per key, on the numba kernel
when the query is strongly typed and the run's fields hold numbers, else on the interpreter.

Strongly typed queries keep a key's state in the canonical encoding of the query's automaton
(``state_format``) whichever engine ran it, so the kernel and the compiled interpreter give the
same outputs and state bytes and continue each other's states. Other queries run on the
derivative engine, state pickled.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..expr.values import UNIT
from .compiled import Automaton, CompiledEvaluator, explore
from .derivative import DerivativeEvaluator
from .evaluator import State
from .events import BOOL, FLOAT, INT, OTHER, Events, key_order, objects
from .kernel import Kernel, KernelRun, kernel_for
from .kernel_states import KernelStates
from .kernel_values import Kind
from .strong import strongly_typed
from .terms import Term
from .values import Failure, Outcome

#: Kernel field kind of a run whose values of a field all have the kind.
_FIELD_KINDS = {INT: "int", FLOAT: "float", BOOL: "bool"}
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}  # as json.dumps writes them


#: The outputs that are emitted: values, and errors (reported as ``{"error": reason}``).
EMITTED = ("value", "error")


def value_of(outcome: Outcome) -> float | None:
    """The ``value`` column of an output: its value if it is a number, else None."""
    v = outcome.value
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def json_of(outcome: Outcome) -> str:
    """The ``value_json`` column of an output: its value as JSON, or for an error
    ``{"error": reason}``."""
    if isinstance(outcome.value, Failure):
        return json.dumps({"error": outcome.value.reason})
    return json.dumps(outcome.value, default=str)


@dataclass
class Run:
    """The events of one key released in a step, in (event time, arrival) order."""

    key: Any
    evaluator: bytes | None
    ready: list[tuple[int, int, dict]]  # (event time, arrival seq, item)



#: Per run: the outputs that may be emitted (index in the run, outcome) and the new state.
Evaluated = tuple[list[tuple[int, Outcome]], bytes]


@dataclass(frozen=True)
class Released:
    """The events released in a step, sorted by (key, event time, arrival): one run per key,
    run ``r`` being ``events[bounds[r]:bounds[r + 1]]``."""

    key: np.ndarray  # per run
    evaluator: np.ndarray  # per run: the state before it (bytes or None)
    events: Events
    bounds: np.ndarray  # int64[runs + 1]

    def __len__(self) -> int:
        return len(self.key)

    def run(self, r: int, fields: tuple[str, ...]) -> Run:
        """Run ``r`` with its items as dicts, for the interpreter."""
        lo, hi = int(self.bounds[r]), int(self.bounds[r + 1])
        columns = [self.events.python(j, lo, hi) for j in range(len(fields))]
        items = [dict(zip(fields, values, strict=True)) for values in zip(*columns, strict=True)]
        items = items if fields else [{} for _ in range(hi - lo)]
        return Run(self.key[r], self.evaluator[r], list(zip(
            self.events.t[lo:hi].tolist(), self.events.seq[lo:hi].tolist(), items, strict=True)))


@dataclass(frozen=True)
class EvaluatedRuns:
    """Some runs evaluated: their new states and, by released event, the value outputs that may
    be emitted (in mode ``changes``, a kernel already drops values equal to the one before)."""

    runs: np.ndarray  # int64
    states: list[bytes]  # per run of ``runs``
    events: np.ndarray  # int64: positions in the released events
    values: np.ndarray  # float64: the ``value`` column (NaN: not a number)
    texts: np.ndarray  # object: the ``value_json`` column



def _leaf_texts(column: np.ndarray, show: Callable[[Any], str], prefix: str, suffix: str
                ) -> np.ndarray:
    """``prefix + show(v) + suffix`` of each value of ``column`` (int64 or float64), formatted
    once per distinct bit pattern (so ``-0.0`` stays apart from ``0.0``, any NaN is NaN)."""
    bits = column.view(np.int64)
    distinct, inverse = np.unique(bits, return_inverse=True)
    shown = [prefix + show(v) + suffix for v in distinct.view(column.dtype).tolist()]
    return np.array(shown, dtype=object)[inverse.reshape(-1)] if shown \
        else np.empty(0, dtype=object)


def _float_text(value: float) -> str:
    """``json.dumps`` of a float."""
    text = repr(value)
    return _NON_FINITE.get(text, text)


def _texts(kind: Kind, ints: np.ndarray, floats: np.ndarray, used: list[int],
           prefix: str = "", suffix: str = "") -> np.ndarray:
    """``prefix + json.dumps(value, default=str) + suffix`` of each kernel output value of
    ``kind`` (an object array), whose leaves are the next int and float slots (``used``: the
    slots taken so far). Leaves are formatted per distinct value, with the brackets and commas
    around them; only the leaves of a tuple are joined row by row."""
    rows = len(ints)
    if kind == "u" or kind == ():
        text = json.dumps(UNIT, default=str) if kind == "u" else "[]"
        return np.full(rows, prefix + text + suffix, dtype=object)
    if isinstance(kind, tuple):
        last = len(kind) - 1
        parts = [_texts(k, ints, floats, used, prefix + "[" if i == 0 else ", ",
                        "]" + suffix if i == last else "") for i, k in enumerate(kind)]
        joined = parts[0]
        for part in parts[1:]:
            joined = np.add(joined, part)
        return joined
    if kind == "f":
        used[1] += 1
        return _leaf_texts(floats[:, used[1] - 1], _float_text, prefix, suffix)
    used[0] += 1
    column = ints[:, used[0] - 1]
    if kind == "b":
        return np.where(column != 0, prefix + "true" + suffix, prefix + "false" + suffix
                        ).astype(object)
    return _leaf_texts(column, str, prefix, suffix)


def _kernel_values(kernel: Kernel, result: KernelRun, rows: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The ``value`` and ``value_json`` of the kernel's value outputs after items ``rows``."""
    values, texts = np.full(len(rows), np.nan), np.empty(len(rows), dtype=object)
    otype = result.otype[rows]
    for number in np.unique(otype):
        at = np.flatnonzero(otype == number)
        kind = kernel.generated.out_kinds[number]
        ints, floats = result.ints[rows[at]], result.floats[rows[at]]
        texts[at] = _texts(kind, ints, floats, [0, 0])
        if kind == "i":
            values[at] = ints[:, 0]
        elif kind == "f":
            values[at] = floats[:, 0]
    return values, texts



class RunEvaluator:
    """Evaluates the runs of one query (``term``, reading ``fields`` sorted by name) in output
    mode ``output``; ``use_kernel=False`` runs everything on the interpreter."""

    def __init__(self, term: Term, fields: tuple[str, ...], output: str,
                 use_kernel: bool = True):
        self.term, self.fields, self.output = term, fields, output
        found = explore(term)
        self.automaton: Automaton | None = found if isinstance(found, Automaton) else None
        strong, _ = strongly_typed(term)
        self.engine = CompiledEvaluator() if strong else DerivativeEvaluator
        self.use_kernel = use_kernel
        self._kernels: dict[tuple[str, ...], Kernel | None] = {}

    def load(self, blob: bytes | None) -> State:
        """The evaluator state stored as ``blob`` (None: before any event)."""
        if self.automaton is not None:
            return self.automaton.start() if blob is None else self.automaton.load(blob)
        return self.engine.start(self.term) if blob is None else pickle.loads(blob)

    def dump(self, state: State) -> bytes:
        """The bytes stored for ``state``."""
        if self.automaton is not None:
            return self.automaton.dump(state)  # type: ignore[arg-type]
        return pickle.dumps(state)

    def evaluate(self, runs: Released) -> list[EvaluatedRuns]:
        """Every run of ``runs``: those the kernel takes in one call per combination of field
        kinds, the others on the interpreter in key order (as is an error they raise)."""
        done = list((self.kernel_runs(runs) if self.automaton is not None and self.use_kernel
                     else {}).values())
        covered = np.zeros(len(runs), np.bool_)
        for part in done:
            covered[part.runs] = True
        rest = np.flatnonzero(~covered)
        rest = rest[key_order(runs.key[rest], np.zeros(len(rest), np.int64))]
        return done + [self._interpreted(runs, r) for r in rest.tolist()]

    def _interpreted(self, runs: Released, r: int) -> EvaluatedRuns:
        candidates, state = self.interpret(runs.run(r, self.fields))
        return EvaluatedRuns(np.array([r]), [state],
                          np.array([runs.bounds[r] + i for i, _ in candidates], np.int64),
                          np.array([value_of(o) for _, o in candidates], np.float64),
                          objects([json_of(o) for _, o in candidates]))

    def interpret(self, run: Run) -> Evaluated:
        state, candidates = self.load(run.evaluator), []
        for i, (_, _, item) in enumerate(run.ready):
            state = state.step(item)
            if self.output != "final":
                outcome = state.output()
                if outcome.kind in EMITTED:
                    candidates.append((i, outcome))
        return candidates, self.dump(state)

    def _kernel(self, kinds: tuple[str, ...]) -> Kernel | None:
        if kinds not in self._kernels:
            self._kernels[kinds] = kernel_for(self.term, dict(zip(self.fields, kinds,
                                                                  strict=True)))
        return self._kernels[kinds]

    def kernel_runs(self, runs: Released) -> dict[tuple[str, ...], EvaluatedRuns]:
        """The runs the kernel evaluates, per combination of the kinds of the fields' values:
        one call each (runs with mixed or non-numeric values are left to the interpreter)."""
        starts = runs.bounds[:-1]
        low = np.stack([np.minimum.reduceat(runs.events.kind[:, j], starts)
                        for j in range(len(self.fields))], axis=1) \
            if self.fields else np.zeros((len(runs), 0), np.int8)
        high = np.stack([np.maximum.reduceat(runs.events.kind[:, j], starts)
                         for j in range(len(self.fields))], axis=1) \
            if self.fields else low
        members = np.flatnonzero(((low == high) & (low != OTHER)).all(axis=1))
        combo = np.zeros(len(members), np.int64)  # numbers the combinations of kinds
        for j in range(len(self.fields)):
            combo = pd.factorize(combo * 3 + low[members, j])[0]
        done = {}
        for number in range(int(combo.max()) + 1 if len(combo) else 0):
            group = members[combo == number]
            kinds = tuple(_FIELD_KINDS[c] for c in low[group[0]].tolist())
            kernel = self._kernel(kinds)
            if kernel is not None:
                done[kinds] = self._on_kernel(kernel, runs, group)
        return done

    def _on_kernel(self, kernel: Kernel, runs: Released, members: np.ndarray) -> EvaluatedRuns:
        """One kernel call over the runs ``members``; a run the kernel cannot take (its state
        does not fit this kernel) or hands back (a step needs Python) is left out."""
        lengths = np.diff(runs.bounds)
        rows = np.arange(len(runs.events)) if len(members) == len(runs) else \
            np.flatnonzero(np.repeat(np.isin(np.arange(len(runs)), members), lengths))
        bounds = np.append(0, np.cumsum(lengths[members]))
        states, ok = kernel.load(list(runs.evaluator[members]))
        columns = {field: runs.events.column(j, kind, rows)
                   for j, (field, kind) in enumerate(zip(self.fields, kernel.kinds, strict=True))}
        result = kernel.run(columns, bounds, states, self.output)
        good = ok & (result.failed < 0)
        final = result.states
        states = kernel.dumps(KernelStates(final.state[good], final.ints[good], final.floats[good]))
        if self.output == "final":
            hits = np.zeros(0, np.int64)
        else:
            emit = (result.kind == 1) & np.repeat(good, lengths[members])
            if self.output == "changes":
                emit &= ~result.same  # equal to the previous value: never emitted
            hits = np.flatnonzero(emit)
        values, texts = _kernel_values(kernel, result, hits)
        return EvaluatedRuns(members[good], states, rows[hits], values, texts)

    # -- steps -----------------------------------------------------------------------------

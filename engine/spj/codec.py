"""The one owner of the executor state's byte format: canonical, sorted JSON.

Bucket synopses and the full history (:class:`StateFormat`) and the down-set summaries of
application time (:class:`TimedFormat`) are written here. Equal states (for instance after two
batch plans of the same input) give equal bytes; every
integer is written at a fixed width, so a synopsis whose counters grow keeps its encoded size.
The document is tagged with the format version, the query fingerprint and the mode, and
:meth:`StateFormat.decode` refuses any other.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .aggregates import AggOp
from .batches import Batches
from .errors import SpjError
from .pieces import PieceEngine, PiecesState
from .plan import REPS
from .state import Bucket, Entry, SpjState
from .timed import DownSetEngine, TimedState
from .values import order_key

FORMAT = 1


def canonical(value: Any) -> str:
    """JSON with sorted keys, no spaces between tokens and every integer right-aligned in 20
    characters (JSON allows the leading blanks), so counters do not change the encoded size."""
    if isinstance(value, bool) or value is None or isinstance(value, float | str):
        return json.dumps(value, allow_nan=False, ensure_ascii=False)
    if isinstance(value, int):
        return f"{value:>20d}"
    if isinstance(value, dict):
        items = sorted((str(k), v) for k, v in value.items())
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{canonical(v)}"
                              for k, v in items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(canonical(v) for v in value) + "]"
    raise TypeError(f"cannot encode {type(value).__name__} in an executor state")


def open_doc(data: bytes, fingerprint: str, mode: str, runs: str) -> dict:
    """The JSON document of an encoded state, refused unless it has this format, query
    ``fingerprint`` and ``mode`` (``runs`` says what this executor runs, for the refusal)."""
    try:
        doc = json.loads(data)
    except ValueError as err:
        raise SpjError(f"not an encoded executor state: {err}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise SpjError("not an encoded executor state (unknown format)")
    if (doc.get("query"), doc.get("mode")) != (fingerprint, mode):
        raise SpjError(f"state of another query or mode ({doc.get('mode')}); this executor "
                       f"runs {runs}")
    return doc


class StateFormat:
    """Encodes and decodes the states of one executor (``batches`` rebuilds full-history
    indexes; ``describe`` names the query in refusals)."""

    def __init__(self, fingerprint: str, mode: str, batches: Batches, aggs: Sequence[AggOp],
                 describe: str):
        self.fingerprint, self.mode, self.batches = fingerprint, mode, batches
        self.aggs, self.describe = aggs, describe

    def encode(self, state: SpjState) -> bytes:
        """Canonical bytes of ``state``."""
        doc: dict[str, Any] = {
            "format": FORMAT, "query": self.fingerprint, "mode": self.mode,
            "emitted": sorted((list(r) for r in state.emitted), key=order_key),
            "groups": [[list(g), self._enc_acc(acc)] for g, acc in
                       sorted(state.groups.items(), key=lambda x: order_key(x[0]))]}
        doc.update(self.body(state))
        return canonical(doc).encode()

    def body(self, state: SpjState) -> dict[str, Any]:
        """The stored tuples, buckets or representatives of ``state`` (no header, no emitted
        set, no groups)."""
        if self.batches.full_history:
            return {"rows": [[list(t) for t in rows] for rows in state.rows]}
        if self.batches.plan.path == REPS:
            return {"reps": [[[list(b), {r: list(t) for r, t in bk.roles.items()},
                               self._enc_parts(bk.parts)] for b, bk in
                              sorted(buckets.items(), key=lambda x: order_key(x[0]))]
                             for buckets in state.reps]}
        return {"buckets": [[[list(b), list(e.rep), e.count, self._enc_parts(e.parts)]
                             for b, e in sorted(s.entries.items(),
                                                key=lambda x: order_key(x[0]))]
                            for s in state.stores]}

    def decode(self, data: bytes) -> SpjState:
        """The state :meth:`encode` wrote; refuses states of another query or mode."""
        doc = open_doc(data, self.fingerprint, self.mode,
                       f"{self.describe!r} in {self.mode} mode")
        try:
            return self._rebuild(doc)
        except (KeyError, TypeError, ValueError, IndexError) as err:
            raise SpjError(f"malformed executor state: {err!r}") from None

    def _enc_acc(self, acc: list) -> list:
        return [a.encode(x) for a, x in zip(self.aggs, acc, strict=True)]

    def _enc_parts(self, parts: dict[int, Any] | None) -> list:
        return [[k, self.aggs[k].encode(x)] for k, x in sorted((parts or {}).items())]

    def _dec_parts(self, data: list) -> dict[int, Any]:
        return {k: self.aggs[k].decode(x) for k, x in data}

    def _rebuild(self, doc: dict) -> SpjState:
        state = self.batches.init()
        state.emitted = {tuple(r) for r in doc["emitted"]}
        state.groups = {tuple(g): [a.decode(x) for a, x in zip(self.aggs, acc, strict=True)]
                        for g, acc in doc["groups"]}
        self.load_body(state, doc)
        return state

    def load_body(self, state: SpjState, doc: dict) -> None:
        """Fill the empty ``state`` from what :meth:`body` wrote."""
        if self.batches.full_history:
            for i, rows in enumerate(doc["rows"]):
                self.batches.load_rows(state, i, [tuple(r) for r in rows])
        elif self.batches.plan.path == REPS:
            for i, buckets in enumerate(doc["reps"]):
                state.reps[i] = {tuple(b): Bucket({r: tuple(t) for r, t in roles.items()},
                                                  self._dec_parts(parts))
                                 for b, roles, parts in buckets}
        else:
            for i, entries in enumerate(doc["buckets"]):
                for b, rep, count, parts in entries:
                    state.stores[i].add(tuple(b), Entry(tuple(rep), count,
                                                        self._dec_parts(parts)))


class TimedFormat:
    """Encodes and decodes the states of one down-set engine (application time)."""

    def __init__(self, fingerprint: str, engine: DownSetEngine, describe: str):
        self.fingerprint, self.engine, self.describe = fingerprint, engine, describe

    def encode(self, state: TimedState) -> bytes:
        """Canonical bytes of ``state``."""
        e = self.engine
        doc = {"format": FORMAT, "query": self.fingerprint, "mode": "down-sets",
               "now": state.now,
               "cache": [[list(t) for t in state.cache[o]] for o in e.occs],
               "summaries": [[[list(k), *self._entry(x)] for k, x in
                              sorted(state.summaries[d].items(), key=lambda i: order_key(i[0]))]
                             for d in e.downs],
               "emitted": sorted((list(r) for r in state.emitted), key=order_key)}
        return canonical(doc).encode()

    def _entry(self, x: Entry | Bucket) -> list:
        """A bag bucket as [representative, count], a set bucket as [{role: representative}]."""
        if isinstance(x, Entry):
            return [list(x.rep), x.count]
        return [{r: list(t) for r, t in x.roles.items()}]

    def decode(self, data: bytes) -> TimedState:
        """The state :meth:`encode` wrote; refuses states of another query or engine."""
        doc = open_doc(data, self.fingerprint, "down-sets",
                       f"{self.describe!r} on down-set summaries")
        e = self.engine
        try:
            state = e.init()
            state.now = doc["now"]
            for o, rows in zip(e.occs, doc["cache"], strict=True):
                state.cache[o] = [tuple(r) for r in rows]
            for d, entries in zip(e.downs, doc["summaries"], strict=True):
                state.summaries[d] = {
                    tuple(k): Entry(tuple(rest[0]), rest[1], None) if e.bag else
                    Bucket({r: tuple(t) for r, t in rest[0].items()}) for k, *rest in entries}
            state.emitted = {tuple(r) for r in doc["emitted"]}
            return state
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as err:
            raise SpjError(f"malformed executor state: {err!r}") from None


class PiecesFormat:
    """Encodes and decodes the states of one set self-join run per derived LTO query."""

    def __init__(self, fingerprint: str, engine: PieceEngine, describe: str):
        self.fingerprint, self.engine, self.describe = fingerprint, engine, describe
        self.parts = [StateFormat(fingerprint, "synopsis", b, [], describe)
                      for b in engine.batches]

    def encode(self, state: PiecesState) -> bytes:
        """Canonical bytes of ``state``."""
        doc = {"format": FORMAT, "query": self.fingerprint, "mode": "pieces",
               "emitted": sorted((list(r) for r in state.emitted), key=order_key),
               "pieces": [f.body(s) for f, s in zip(self.parts, state.pieces, strict=True)]}
        return canonical(doc).encode()

    def decode(self, data: bytes) -> PiecesState:
        """The state :meth:`encode` wrote; refuses states of another query or engine."""
        doc = open_doc(data, self.fingerprint, "pieces",
                       f"{self.describe!r} per derived LTO query")
        try:
            state = self.engine.init()
            state.emitted.update(tuple(r) for r in doc["emitted"])
            for f, s, body in zip(self.parts, state.pieces, doc["pieces"], strict=True):
                f.load_body(s, body)
            return state
        except (KeyError, TypeError, ValueError, IndexError) as err:
            raise SpjError(f"malformed executor state: {err!r}") from None

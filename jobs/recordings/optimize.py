"""``reprise optimize``: rewrite a recording's data files into the key-hash layout
(:mod:`jobs.recordings.layout`) in one commit that changes no row and no arrival sequence.

The files are rewritten from the first one not in the layout (in arrival order) to the last, each
into one file with the same rows and the same arrival order (kept in its arrival column), named
so that the new files sort like the old ones: they all come with the rearranging commit, and a
snapshot orders the files of one commit by name. Every replay of every version therefore numbers
every event as before (earlier versions still read the old files, until they are vacuumed).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from engine.errors import RepriseError
from engine.specs import RecordingSpec
from jobs.execution.input_files import read_range
from jobs.recordings.layout import layout_key, stage_laid_out
from jobs.storage import DeltaStorage
from jobs.storage.rearrange import commit_rearranged
from jobs.warehouse import Warehouse


@dataclass(frozen=True)
class Optimized:
    """What ``optimize`` did to a recording."""

    version: int | None  # the rearranging commit (None: the files were all in the layout)
    rewritten: int  # files rewritten
    kept: int  # files already in the layout, before the first rewritten one


def optimize_recording(storage: DeltaStorage, warehouse: Warehouse, spec: RecordingSpec
                       ) -> Optimized:
    """Rewrite the recording's files that are not in the key-hash layout (and those after them)
    into it, as one commit with ``dataChange`` false (see the module docstring)."""
    path = warehouse.recording(spec.name)
    if not storage.exists(path):
        raise RepriseError(f"no recording {spec.name!r} at {path}; run `reprise generate` or "
                           "`reprise record` first")
    version = storage.version(path)
    files = storage.files(path, version)
    first = next((i for i, f in enumerate(files) if layout_key(f.uri) != spec.key), None)
    if first is None:
        return Optimized(None, 0, len(files))
    schema = storage.schema(path, version)
    tag = uuid.uuid4().hex[:12]
    replaced = {}
    for i, f in enumerate(files[first:]):
        (rows,) = read_range([{"uri": f.uri, "offset": 0}], schema.names, [], 0, 2**62)
        replaced[f.uri] = stage_laid_out(storage, path, rows.table.cast(schema), spec.key,
                                         tag=f"rearranged-{tag}-{i:06d}")
    done = commit_rearranged(path, replaced, schema, {"reprise.optimize": spec.key})
    return Optimized(done, len(replaced), first)

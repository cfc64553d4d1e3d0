"""The shared plan of catalog queries on one recording (``reprise plan``, shared replays): their
sharing views, the recording's statistics for the cost model, and the plan as text."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from engine.catalog import Catalog
from engine.errors import RepriseError
from engine.operator import exact_pandas
from engine.registry import family_of
from engine.sharing import SharedPlan, SharingView, Statistics, plan_queries
from engine.sharing.derived import with_derived
from engine.specs import QuerySpec, RecordingSpec
from jobs.execution.derived_columns import worker_derive
from jobs.storage import ARRIVAL_COLUMN
from jobs.storage.locations import filesystem, logged_file, table_root
from jobs.warehouse import Warehouse

#: Rows of the recording's latest snapshot the selectivities, key counts and time span are
#: estimated on (the head of each data file, as many rows as its share of the snapshot).
SAMPLE_ROWS = 20_000
#: Data files the sample reads at most (evenly spaced in path order when there are more).
SAMPLE_FILES = 200


class SharingError(RepriseError):
    """Queries cannot be planned together (the message names them and their recordings)."""


def named_once(names: list[str]) -> None:
    """Refuse an empty list of query names or one naming a query twice."""
    if not names:
        raise SharingError("name at least one query")
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise SharingError(f"queries named more than once: {', '.join(twice)}")


def one_input(catalog: Catalog, names: list[str]) -> list[QuerySpec]:
    """The named queries, which must read one input: one recording, or the output of one
    upstream query (pipeline stages over one upstream share its stream as queries share a
    recording); else the error says what each reads."""
    queries = [catalog.query(name) for name in names]
    reads = {q.name: (f"the output of query {q.input}" if q.upstream is not None
                      else "+".join(sorted(set(q.inputs.values())))) for q in queries}
    if len(set(reads.values())) > 1:
        said = ", ".join(f"{name} reads {what}" for name, what in reads.items())
        raise SharingError(f"queries replayed or planned together must read one recording "
                           f"or one query's output: {said}")
    return queries


def on_its_own(query: QuerySpec, recordings: dict[str, RecordingSpec]) -> str | None:
    """Why ``query`` is replayed on its own beside a shared run (None: it can share a scan);
    ``recordings``: the catalog's. Derived columns share the scan when the workers compute
    them (:func:`~jobs.execution.derived_columns.worker_derive`)."""
    if not family_of(query.kind, query.source).single_input:
        return (f"an {query.kind} query reads merged recordings, which a scan of one recording "
                "does not give")
    if query.derived:
        columns = query.input_stream(recordings).columns
        found = worker_derive(query.derived, columns, query.key, [], check_order=False)
        if isinstance(found, str):
            return (f"its derived columns need Spark SQL ({found}), which the shared scan does "
                    "not run")
    return None


def sharing_views(catalog: Catalog, names: list[str]) -> list[SharingView]:
    """The planner's view of each named query that can share a scan (see :func:`on_its_own`);
    the queries must read one recording (else the error says which recording each reads) and
    be named once."""
    named_once(names)
    queries = one_input(catalog, names)
    return [with_derived(family_of(q.kind, q.source).sharing_view(q, catalog.recordings),
                         q.derived)
            for q in queries if on_its_own(q, catalog.recordings) is None]


def _data_files(path: str) -> list[tuple[str, int]]:
    """(local path or URI, rows) of each data file of the table's latest snapshot, by path."""
    try:
        table = DeltaTable(path)
    except TableNotFoundError as exc:
        raise SharingError(f"no recording data at {path}; run `reprise generate` or "
                           "`reprise record` first") from exc
    actions = pa.table(table.get_add_actions(flatten=True))
    root = table_root(path)
    out = []
    for logged, rows in zip(actions.column("path").to_pylist(),
                            actions.column("num_records").to_pylist(), strict=True):
        file = logged_file(root, logged)
        if rows is None:
            fs, inner = filesystem(file)
            with fs.open_input_file(inner) as handle:
                rows = pq.ParquetFile(handle).metadata.num_rows
        out.append((file, rows))
    return sorted(out)


def table_statistics(path: str, columns: set[str], sample_rows: int = SAMPLE_ROWS
                     ) -> Statistics:
    """The row count of the latest snapshot of the input table at ``path`` (a recording, or a
    pipeline stage's input) and a deterministic sample of its ``columns`` (those it has) that
    spans the whole table: the first rows (in arrival order) of each data file, as many as its
    share of the snapshot's rows (``sample_rows`` in all; of at most :data:`SAMPLE_FILES` files,
    evenly spaced in path order when there are more). With every file read, the sample does
    not depend on how the files are named."""
    files = _data_files(path)
    total = sum(rows for _, rows in files)
    step = max(1, -(-len(files) // SAMPLE_FILES))
    read = [(path, rows) for path, rows in files[::step] if rows]
    share = sum(rows for _, rows in read)

    def head(path: str, rows: int) -> pa.RecordBatch | None:
        first = -(-sample_rows * rows // share)
        fs, inner = filesystem(path)
        with fs.open_input_file(inner) as handle, pq.ParquetFile(handle) as parquet:
            names = [c for c in sorted(columns) if c in parquet.schema_arrow.names]
            if ARRIVAL_COLUMN in parquet.schema_arrow.names:  # (key-hash layout: by arrival)
                table = parquet.read(columns=[*names, ARRIVAL_COLUMN])
                table = table.filter(pc.less(table.column(ARRIVAL_COLUMN), first))
                table = table.sort_by(ARRIVAL_COLUMN).drop_columns([ARRIVAL_COLUMN])
                return table.combine_chunks().to_batches()[0] if table.num_rows else None
            return next(parquet.iter_batches(batch_size=first, columns=names), None)

    with ThreadPoolExecutor(4) as pool:  # (pyarrow decodes without the GIL)
        heads = list(pool.map(head, *zip(*read, strict=True))) if read else []
    tables = [pa.Table.from_batches([h]) for h in heads if h is not None]
    sample = exact_pandas(pa.concat_tables(tables, promote_options="default")) if tables else None
    return Statistics(rows=total, sample=sample)


def shared_plan(catalog: Catalog, warehouse: Warehouse, names: list[str],
                sample: str | None = None) -> SharedPlan:
    """The shared plan of the named queries over the statistics of the table they read
    (``sample``; default their recording: pipeline stages over one upstream pass one of their
    runs' input tables); an empty plan when none of them can share a scan (each is replayed on
    its own)."""
    views = sharing_views(catalog, names)
    if not views:
        return plan_queries([], Statistics(rows=0))
    columns = {c for v in views for c in v.columns}
    return plan_queries(views, table_statistics(sample or warehouse.recording(views[0].recording),
                                                columns))


def plan_json(catalog: Catalog, plan: SharedPlan, names: list[str]) -> dict:
    """``plan.to_json()`` and ``on_its_own``: the named queries left out of it, with why."""
    alone = {n: why for n in names
             if (why := on_its_own(catalog.query(n), catalog.recordings)) is not None}
    return {**plan.to_json(), "on_its_own": alone}


def plan_text(plan: SharedPlan, on_its_own_: dict[str, str]) -> list[str]:
    """The plan as lines a person reads (:meth:`SharedPlan.describe`: clusters, pane groups,
    residuals, estimates, hash), then the queries replayed on their own and why."""
    return [*plan.describe().splitlines(),
            *(f"{name}: on its own: {why}" for name, why in on_its_own_.items())]

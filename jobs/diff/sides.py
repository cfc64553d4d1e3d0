"""The two sides of ``reprise diff``: run ids or query names resolved to complete runs that read
one recording version. A query name means its latest complete run of the catalog's current
definition at the other side's version and batch plan, replayed first when there is none."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.catalog import Catalog
from engine.errors import RepriseError
from engine.family import RowIdentity
from engine.registry import family_of, operator_for
from engine.specs import QuerySpec
from jobs.runs.listing import made_at
from jobs.runs.replay import Replay
from jobs.runs.run_info import RunInfo, fingerprint, load_run_file, read_run
from jobs.runs.run_query import query_of_run


class DiffError(RepriseError):
    """The sides of a diff cannot be compared; the message names them and says why."""


@dataclass(frozen=True)
class Side:
    """A complete run as one side of a diff, and the definition it was made with."""

    given: str  # what the user named: a run id or a query name
    info: RunInfo
    query: QuerySpec
    identity: RowIdentity

    @property
    def reads(self) -> str:
        """The recordings and versions the run read, e.g. ``vitals@9``."""
        return reads_of(self.query, self.info)


def reads_of(query: QuerySpec, info: RunInfo) -> str:
    """``recording@version`` of each input the run of ``query`` read."""
    sources = info.sources or {"input": info.input_version}
    return ", ".join(f"{query.inputs.get(alias, info.recording)}@{version}"
                     for alias, version in sources.items())


def recordings_of(query: QuerySpec) -> str:
    """The recordings ``query`` reads, for a message."""
    return ", ".join(sorted(set(query.inputs.values())))


def identity_of(query: QuerySpec, catalog: Catalog) -> RowIdentity:
    """How the output rows of ``query`` are identified (its family's hook)."""
    return family_of(query.kind, query.source).row_identity(query, catalog.recordings)


def check_same_identity(a: tuple[str, QuerySpec], b: tuple[str, QuerySpec], catalog: Catalog
                        ) -> None:
    """Refuse two queries whose output rows are identified differently (another family,
    another key, another emit mode)."""
    (given_a, query_a), (given_b, query_b) = a, b
    identity_a, identity_b = identity_of(query_a, catalog), identity_of(query_b, catalog)
    if identity_a != identity_b:
        raise DiffError(f"{given_a} ({query_a.kind}) identifies its rows by "
                        f"{describe(identity_a)} but {given_b} ({query_b.kind}) by "
                        f"{describe(identity_b)}; diff compares queries whose rows are "
                        "identified alike")


def describe(identity: RowIdentity) -> str:
    """``identity`` for a message."""
    if identity.columns is None:
        return "all their columns (a multiset of rows)"
    order = f", numbered by {', '.join(identity.order)}" if identity.order else ""
    return f"({', '.join(identity.columns)}){order}"


def query_of(thing: RunInfo | QuerySpec, catalog: Catalog) -> QuerySpec:
    """The definition a run was made with, or the query itself."""
    return query_of_run(thing, catalog)[0] if isinstance(thing, RunInfo) else thing


def side_of_run(runner: Replay, given: str, info: RunInfo) -> Side:
    """The run ``info`` as a side; an incomplete run is refused."""
    done = runner.manifest(info.run_id).num_rows
    if done < info.batches + 1:
        raise DiffError(f"run {info.run_id!r} is incomplete ({done} of {info.batches + 1} "
                        f"batches committed); finish it with `reprise replay {info.query} "
                        f"--run-id {info.run_id}` first")
    query = query_of(info, runner.catalog)
    return Side(given, info, query, identity_of(query, runner.catalog))


def is_run(runner: Replay, name: str) -> bool:
    """``name`` is the id of a run in the warehouse."""
    return name in runner.warehouse.runs()


def named(runner: Replay, name: str) -> RunInfo | QuerySpec:
    """The run or the catalog query ``name`` names (a run id first)."""
    if is_run(runner, name):
        return read_run(runner.warehouse, name)
    if name in runner.catalog.queries or name in runner.catalog.broken_queries:
        return runner.catalog.query(name)
    runs = ", ".join(runner.warehouse.runs()) or "none"
    queries = ", ".join(sorted(runner.catalog.queries)) or "none"
    raise DiffError(f"{name!r} is neither a run in {runner.warehouse.root} (runs: {runs}) nor a "
                    f"query of the catalog {runner.catalog.root} (queries: {queries})")


def check_same_recordings(a: tuple[str, RunInfo | QuerySpec], b: tuple[str, RunInfo | QuerySpec],
                          catalog: Catalog) -> None:
    """Refuse sides that read different recordings (or, two runs, different versions)."""
    said = []
    for given, thing in (a, b):
        if isinstance(thing, RunInfo):
            query = query_of(thing, catalog)
            said.append((f"run {given}", recordings_of(query), reads_of(query, thing)))
        else:
            said.append((f"query {given}", recordings_of(thing), recordings_of(thing)))
    (what_a, recs_a, reads_a), (what_b, recs_b, reads_b) = said
    runs = all(isinstance(thing, RunInfo) for _, thing in (a, b))
    if recs_a != recs_b or (runs and reads_a != reads_b):
        raise DiffError(f"{what_a} reads {reads_a} but {what_b} reads {reads_b}; diff compares "
                        "two runs of one recording version")


def latest_complete(runner: Replay, query: QuerySpec, like: RunInfo | None) -> RunInfo | None:
    """The newest complete run of ``query``'s definition (at ``like``'s versions and cut
    points when given), or None."""
    fp = fingerprint(query, operator_for(query, runner.catalog.recordings))
    found = []
    for run_id in runner.warehouse.runs():
        run_dir = runner.warehouse.run_dir(run_id)
        info = load_run_file(run_dir / "run.json")
        if info.query != query.name or info.fingerprint != fp:
            continue
        if like is not None and (info.cuts != like.cuts or reads_of(query, info)
                                 != reads_of(query, like)):
            continue
        if runner.manifest(run_id).num_rows == info.batches + 1:
            found.append((made_at(run_dir, info), run_id, info))
    return max(found, key=lambda f: (f[0], f[1]))[2] if found else None


def replayed(runner: Replay, query: QuerySpec, like: RunInfo | None, run_id: str | None,
             log: Callable[[str], None]) -> RunInfo:
    """A complete run of ``query`` at ``like``'s version and plan (the latest version and the
    query's plan without one): an existing one, else one replayed now (as ``run_id``)."""
    info = latest_complete(runner, query, like)
    if info is not None:
        return info
    version = None
    if like is not None:
        sources = like.sources or {"input": like.input_version}
        if len(sources) > 1:
            raise DiffError(f"query {query.name!r} has no complete run at {reads_of(query, like)}"
                            f"; replay it at those versions first")
        version = next(iter(sources.values()))
    info = runner.prepare(query.name, plan=like.plan if like is not None else None,
                          run_id=run_id, version=version)
    log(f"diff: replaying {query.name} as run {info.run_id} ({reads_of(query, info)}, plan "
        f"{info.plan})")
    runner.run(info)
    return info


def resolve_sides(runner: Replay, a: str, b: str, log: Callable[[str], None]
                  ) -> tuple[Side, Side]:
    """The two sides of ``reprise diff A B``; checks everything before replaying anything."""
    things = {a: named(runner, a), b: named(runner, b)}
    check_same_recordings((a, things[a]), (b, things[b]), runner.catalog)
    check_same_identity((a, query_of(things[a], runner.catalog)),
                        (b, query_of(things[b], runner.catalog)), runner.catalog)
    runs = {given: thing for given, thing in things.items() if isinstance(thing, RunInfo)}
    sides = {given: side_of_run(runner, given, info) for given, info in runs.items()}
    for given in (a, b):
        if given in sides:
            continue
        thing = things[given]
        assert isinstance(thing, QuerySpec)
        like = next((s.info for s in sides.values()), None)
        info = replayed(runner, thing, like, None, log)
        sides[given] = side_of_run(runner, given, info)
    return sides[a], sides[b]

"""Where a replay's bucket tasks run: in a Spark job, or one after the other in the driver process.

``REPRISE_ENGINE`` (or ``reprise replay --engine``) is ``spark``, ``driver`` or ``auto``. With
``auto`` each batch group is run where the run's own estimate says it ends sooner, from the
events left to run (the group's first event to the end of the run), the query family's work per
event (:meth:`engine.family.QueryFamily.step_work`), the tasks a Spark job runs at once (one
per core, each stepping a range of buckets: :func:`job_tasks`; a run has as many buckets as the
cores unless ``REPRISE_BUCKETS`` sets more) and whether a Spark session is up already:

- driver: ``events * (EVENT_IO_US + work per event) / 1e6`` seconds;
- Spark: the same work times :data:`SPARK_OVERHEAD`, spread over the job's tasks, plus
  :data:`SPARK_JOB_S` per job, plus :data:`SPARK_START_S` when no session is up yet.

The constants are measured on a 2-core machine (docs/operations/performance.md): there the
driver wins whatever the size, as Spark's tasks cost about 5 times the driver's work per event
spread over only 2 tasks; with 8 or more cores (or a cluster), large runs go to Spark. A run
on the ``spark`` exchange (Spark reads and shuffles the events, e.g. for derived columns the
workers cannot compute) runs on Spark whatever the setting. The outputs do not depend on the
engine: the same bucket tasks run, in the same order, from the same plan.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import ceil

from engine.sharing.cost import EVENT_US
from engine.sharing.stats import Statistics
from jobs.execution.bucketing import bucket_groups
from jobs.execution.direct_exchange import task_groups
from jobs.runs.run_context import RunContext
from jobs.runs.run_info import ReplayError, RunInfo
from jobs.runtime.lazy_session import LazySpark, not_started
from jobs.settings import ENGINES, SettingsError

#: Spark's start in a new process (JVM, SparkContext, the Python workers, the first job), s:
#: about 5 s on a quiet 2-core machine without the start's measures (class archive, warm
#: workers), a third less with them (``benchmarks.startup``).
SPARK_START_S = 3.0
#: One Spark job's scheduling, task launches and results, s.
SPARK_JOB_S = 0.15
#: An event's work besides its operator step: read, bucketed, its output written (µs); with
#: the families' 0.3 µs of step work, 1 µs an event, as a 1,000,000-event tumbling replay runs
#: in the driver (``benchmarks.whole_command``, less the interpreter's start).
EVENT_IO_US = 0.7
#: An event's cost in a Spark task over its cost in the driver: each task reads its input files
#: through the JVM's task launch, its Python worker writes its own files, and the tasks of a
#: small machine share its cores with the driver and the JVM. Measured on 2 cores as Spark's
#: time less its start, times the buckets, over the driver's time: about 5 at 10,000,000 events
#: (tumbling, 50 commits, ``benchmarks.whole_command``) and 3.5 to 5 at 1,000,000.
SPARK_OVERHEAD = 5.0
#: Spark's estimate, its start included, at most this fraction of the driver's: Spark is sure to
#: end sooner, and the run waits for its start instead of handing over.
SURE = 0.5


@dataclass(frozen=True)
class Estimate:
    """What a run has left to do, as the choice sees it."""

    events: int
    #: The operator's estimated work over those events (µs).
    work_us: float
    #: Spark jobs left (batch groups).
    jobs: int
    #: Tasks a Spark job runs at once (:func:`job_tasks`).
    parallel: int
    spark_up: bool

    def driver_s(self) -> float:
        """Estimated seconds in the driver process (one bucket after the other)."""
        return (self.events * EVENT_IO_US + self.work_us) / 1e6

    def spark_s(self) -> float:
        """Estimated seconds on Spark, its start included when no session is up."""
        return ((0.0 if self.spark_up else SPARK_START_S) + self.jobs * SPARK_JOB_S
                + self.driver_s() * SPARK_OVERHEAD / max(1, self.parallel))


@dataclass(frozen=True)
class EngineChoice:
    """Where a batch group runs (``spark`` or ``driver``) and why, in a few words;
    ``start_spark``: the group runs in the driver while Spark starts in the background, to take
    the run's later groups (a hand-over)."""

    engine: str
    reason: str
    start_spark: bool = False


def choose(setting: str, exchange: str, estimate: Estimate, handover_at: int | None = None,
           first: int = 0) -> EngineChoice:
    """The engine of the batch group starting at batch ``first``: the ``setting`` (``auto``,
    ``spark`` or ``driver``), Spark on the ``spark`` exchange, else by ``estimate``: Spark when
    it is up and ends sooner, or, not up, when it ends sooner by far even with its start
    (:data:`SURE`); the driver when Spark would not end sooner even if it were up; otherwise (the
    estimate unsure) the driver while Spark starts in the background, so that a later group,
    the session up, goes to Spark if it still ends sooner there. With ``handover_at``, the
    groups before that batch run in the driver (Spark starting) and the others on Spark."""
    if setting not in ENGINES:
        raise ReplayError(f"unknown engine {setting!r} (REPRISE_ENGINE or --engine): use "
                          f"{', '.join(ENGINES)}")
    if exchange != "direct":
        if setting == "driver":
            raise ReplayError("engine driver: this run uses the spark exchange (REPRISE_EXCHANGE,"
                              " or derived columns the workers cannot compute), which needs "
                              "Spark; use --engine auto or spark")
        return EngineChoice("spark", "spark exchange")
    if setting != "auto":
        return EngineChoice(setting, "forced")
    if handover_at is not None:
        why = f"hand-over at batch {handover_at} (REPRISE_HANDOVER_AT)"
        return EngineChoice("driver", why, True) if first < handover_at else \
            EngineChoice("spark", why)
    driver, spark = estimate.driver_s(), estimate.spark_s()
    said = f"estimate: driver {driver:.2f} s, spark {spark:.2f} s"
    if estimate.spark_up:
        return EngineChoice("spark" if spark < driver else "driver", said)
    said += " with its start"
    if spark <= driver * SURE or (spark < driver and estimate.jobs == 1):
        return EngineChoice("spark", said)
    warm = replace(estimate, spark_up=True).spark_s()
    if warm < driver and estimate.jobs > 1:
        return EngineChoice("driver", f"{said}, {warm:.2f} s once up: Spark starts meanwhile",
                            True)
    return EngineChoice("driver", said)


def job_tasks(spark: object, buckets: int) -> int:
    """How many tasks a Spark job over ``buckets`` buckets runs at once: one per group of
    buckets (:func:`~jobs.execution.direct_exchange.task_groups`: one per core). A session that
    has not started (a :class:`~jobs.runtime.lazy_session.LazySpark`) is not started for it: a
    local master's cores come from its conf; a cluster's are not known before its executors
    register (nor those of a master it cannot start), and ``buckets`` stands for them (a run
    gets one bucket per core unless ``REPRISE_BUCKETS`` says otherwise)."""
    lazy = not_started(spark)
    if lazy is None:
        return len(task_groups(spark, buckets))  # type: ignore[arg-type]
    try:
        cores = lazy.default_parallelism()
    except SettingsError:  # (a master it cannot start: its start says so, the run stays put)
        cores = None
    return buckets if cores is None else len(bucket_groups(buckets, cores))


def estimate(info: RunInfo, ctx: RunContext, first: int, batches_per_job: int,
             spark: object) -> Estimate:
    """The estimate of the batches of ``info`` from ``first`` to the end of the run, in jobs of
    ``batches_per_job`` batches, on the replay's session ``spark`` (up, or a
    :class:`~jobs.runtime.lazy_session.LazySpark` up once its start has ended; its jobs' tasks:
    :func:`job_tasks`)."""
    lo = info.cuts[first] if first < info.batches else info.total
    events = info.total - lo
    if ctx.family.single_input:
        view = ctx.family.sharing_view(ctx.query, ctx.recordings)
        step = ctx.family.step_work(view, float(events), Statistics(rows=events))
        work_us = step.events + step.output
    else:  # (a merged input: every event enters the operator)
        work_us = events * EVENT_US
    return Estimate(events=events, work_us=work_us,
                    jobs=max(1, ceil((info.batches - first) / max(1, batches_per_job))),
                    parallel=job_tasks(spark, info.buckets),
                    spark_up=not isinstance(spark, LazySpark) or spark.ready)


def engine_for(setting: str, spark: object, info: RunInfo, ctx: RunContext, first: int,
               batches_per_job: int, handover_at: int | None = None) -> EngineChoice:
    """Where the batch group of ``info`` starting at batch ``first`` runs, by ``setting`` (see
    :func:`choose`); ``spark``: the replay's session (a :class:`~jobs.runtime.lazy_session.
    LazySpark` whose start has not ended is not up; a hand-over starts it in the background).
    With ``auto``, a run whose Spark failed to start in the background stays in the driver."""
    lazy = spark if isinstance(spark, LazySpark) else None
    choice = choose(setting, info.exchange,
                    estimate(info, ctx, first, batches_per_job, spark),
                    handover_at, first)
    if lazy is None or setting != "auto" or info.exchange != "direct":
        return choice
    if choice.start_spark:
        lazy.start_in_background()
    failed = lazy.start_error(wait=choice.engine == "spark")
    return choice if failed is None else EngineChoice("driver", f"Spark did not start ({failed})")


def note_engine(info: RunInfo, group: list[int], choice: EngineChoice) -> None:
    """Record in ``info.engines`` that ``choice`` ran ``group``. Batches an entry covers from
    the group's first on were run again (a continuation reruns the batches it rewound) and
    leave that entry; a group that follows an entry of the same engine extends it, so a run
    continued segment after segment the same way keeps one entry."""
    first = group[0]
    kept = [e for e in info.engines if e["batches"][0] < first]
    if kept and kept[-1]["batches"][1] >= first:
        kept[-1]["batches"][1] = first - 1
    last = kept[-1] if kept else None
    if last and last["engine"] == choice.engine and last["batches"][1] + 1 == first:
        last["batches"][1] = group[-1]
    else:
        kept.append({"batches": [first, group[-1]], "engine": choice.engine,
                     "reason": choice.reason})
    info.engines[:] = kept


def engines_summary(info: RunInfo) -> str:
    """Which engine ran which batches, e.g. ``driver`` or ``driver 0-31, spark 32-64``."""
    if not info.engines:
        return ""
    if len(info.engines) == 1:
        return info.engines[0]["engine"]
    return ", ".join(f"{e['engine']} {e['batches'][0]}-{e['batches'][1]}" for e in info.engines)

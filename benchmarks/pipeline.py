"""Benchmark: a two-stage pipeline, fused and as separate replays, against its first stage alone.

Over N vitals events (default 1M, 1000 patients, 20 commits, one batch per commit) the
pipeline ``vitals_tachy_alert`` (a QRE per patient over the per-minute statistics of
``vitals_hr_1m``, a window per patient) is replayed three ways in the same process, in rounds
that run each once in turn after one untimed round (``harness.medians``; medians reported):

- ``upstream``: the first stage alone (``vitals_hr_1m``, a fresh run);
- ``separate``: both stages as separate replays, as a stage runs when it cannot be fused: a
  fresh run of the first stage, then the stage's run over its output table (its input table
  written from that output, then replayed);
- ``fused``: both stages in one run of bucket tasks (each stage still commits its own run).

Each side times its runs' preparation after the first stage's (the stage's input table is part
of the separate path's cost). The separate path's parts are reported too (medians of each:
the first stage's run, the stage's preparation, which writes its input table, and the stage's
run), so that what the stage costs on each side can be read off. Targets: fused at least 1.5x
faster than separate, at most 1.3x the first stage alone. Run with
``python -m benchmarks.pipeline [--events N] [--engine auto|driver|spark]`` (recorded as
``pipeline``, or ``pipeline_<engine>`` with an engine forced).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from collections.abc import Callable

from engine.catalog import load_catalog
from jobs.runs.pipeline_fusion import fused_stage
from jobs.runs.pipeline_stage import stage_over
from jobs.runs.replay import Replay, run_id_of
from jobs.runs.run_info import RunInfo

from .harness import ROOT, bench, medians
from .results import command_line, record

UPSTREAM, STAGE = "vitals_hr_1m", "vitals_tachy_alert"


def timed(replay: Replay, stages: Callable[[RunInfo, str], None]) -> Callable[[], float]:
    """A work for ``medians``: a fresh run of the first stage prepared (not timed), then
    ``stages(upstream, tag)`` timed (``tag`` names its runs)."""

    def run() -> float:
        tag = uuid.uuid4().hex[:8]
        upstream = replay.prepare(UPSTREAM, plan="commit", run_id=f"up-{tag}")
        started = time.perf_counter()
        stages(upstream, tag)
        return time.perf_counter() - started

    return run


def works(replay: Replay, parts: dict[str, list[float]]
          ) -> dict[str, Callable[[], float]]:
    """The three sides: the first stage alone, both stages as separate replays (the stage's
    run over the first stage's output table), both fused; ``parts`` gets the seconds of each
    part of the separate path, round by round."""

    def alone(upstream: RunInfo, _: str) -> None:
        replay.run(upstream)

    def separate(upstream: RunInfo, tag: str) -> None:
        started = time.perf_counter()
        replay.run(upstream)
        ran = time.perf_counter()
        stage = stage_over(replay, replay.context(STAGE), upstream, f"sep-{tag}", run_id_of)
        prepared = time.perf_counter()
        replay.run(stage)
        done = time.perf_counter()
        for name, seconds in (("separate_upstream_s", ran - started),
                              ("separate_stage_prepare_s", prepared - ran),
                              ("separate_stage_run_s", done - prepared)):
            parts.setdefault(name, []).append(seconds)

    def fused(upstream: RunInfo, tag: str) -> None:
        stage = fused_stage(replay, replay.context(STAGE), upstream, f"fus-{tag}", run_id_of)
        assert stage is not None and stage.fused_with == upstream.run_id
        replay.run(stage)

    return {"upstream": timed(replay, alone), "separate": timed(replay, separate),
            "fused": timed(replay, fused)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmups", type=int, default=1)
    parser.add_argument("--engine", default="auto", choices=["auto", "driver", "spark"])
    args = parser.parse_args()
    catalog = load_catalog(ROOT / "schemas")
    with bench(args.master) as b:
        warehouse = b.vitals(catalog, "big", args.events, args.keys, args.batches)
        replay = Replay(b.spark, b.storage, warehouse, catalog, engine=args.engine)
        parts: dict[str, list[float]] = {}
        timed = medians(works(replay, parts), rounds=args.rounds, warmups=args.warmups)
    up, sep, fus = timed["upstream"], timed["separate"], timed["fused"]
    result = {"events": args.events, "keys": args.keys, "batches": args.batches,
              "master": args.master, "engine": args.engine, "rounds": args.rounds,
              "upstream_s": round(up, 2), "separate_s": round(sep, 2), "fused_s": round(fus, 2),
              "speedup": round(sep / fus, 2), "fused_over_upstream": round(fus / up, 2),
              **{name: round(statistics.median(seconds[args.warmups:]), 3)
                 for name, seconds in parts.items()}}
    print(json.dumps(result, indent=1))
    record("pipeline" if args.engine == "auto" else f"pipeline_{args.engine}",
           command=command_line(),
           data_size={"events": args.events, "keys": args.keys, "batches": args.batches},
           medians={"upstream_s": up, "separate_s": sep, "fused_s": fus,
                    **{name: result[name] for name in ("separate_stage_prepare_s",
                                                       "separate_stage_run_s")},
                    # (the second target's ratio, shown with the medians)
                    "fused_over_upstream": result["fused_over_upstream"]},
           ratio=result["speedup"],
           target="separate / fused >= 1.5; fused / first stage alone <= 1.3", extra=result)
    print(f"2-stage pipeline over {args.events:,} events in {args.batches} batches, medians of "
          f"{args.rounds} rounds: first stage alone {up:.2f} s, separate replays {sep:.2f} s, "
          f"fused {fus:.2f} s: {result['speedup']}x faster than separate (target >= 1.5), "
          f"{result['fused_over_upstream']}x the first stage alone (target <= 1.3); separate: "
          f"first stage {result['separate_upstream_s']:.2f} s, the stage's input table "
          f"{result['separate_stage_prepare_s']:.2f} s, its run "
          f"{result['separate_stage_run_s']:.2f} s")


if __name__ == "__main__":
    main()

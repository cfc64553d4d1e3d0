"""PyFlink peers of two Reprise queries, over a recording exported by ``export_recording``.

Run with PyFlink's own interpreter (never the project's venv), e.g.::

    python3 -m venv /tmp/flinkvenv && /tmp/flinkvenv/bin/pip install apache-flink
    JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64 /tmp/flinkvenv/bin/python \\
        benchmarks/peers/pyflink_queries.py v_shapes /tmp/peer/ticks.csv [--check OUT.csv]
    ... pyflink_queries.py hop /tmp/peer/vitals.csv [--delay 10] [--check OUT.csv]

``v_shapes``: ``ticks_v_shapes`` as MATCH_RECOGNIZE per symbol in event-time order: a V is one or
more falling ticks then a non-falling one (``PATTERN (D+ U)``, ``AFTER MATCH SKIP PAST LAST
ROW``), counted when it rises, as Reprise counts it; one row per V with its depth (the fall from
the price before the first falling tick to the lowest one). ``hop``: the sliding benchmark's
windows (500 s every 5 s, count/avg/min/max of heart rate per patient, ``--delay`` seconds of
watermark delay, 10 by default) as a HOP window TVF. Both run in streaming mode over the bounded
file (``--parallelism``, 2 by default).

Timed mode (default): the query's rows stay in Flink: a cascaded tumbling window over the rows'
event time (``MATCH_ROWTIME()``, ``window_time``) counts them and sums a few columns as a check,
and only that one row is collected, so the time is Flink's query time, not Python's collection
(submission included, JVM start excluded; the whole process is timed too). ``--check OUT.csv``
collects every row instead and writes it (times as UTC strings) for ``compare`` on a small input.
"""

from __future__ import annotations

import argparse
import csv
import time

STARTED = time.perf_counter()

from pyflink.table import EnvironmentSettings, TableEnvironment  # noqa: E402  (timed import)

# ascending timestamps: a row at the largest time seen so far is not late (ticks of different
# symbols often share a millisecond; with ``AS rt`` a periodic watermark at that millisecond
# drops the next ones, a few hundred per million ticks, differently in every run)
TICKS = """CREATE TABLE ticks (symbol STRING, price DOUBLE, volume BIGINT, seq BIGINT,
  ts_ms BIGINT, rt AS TO_TIMESTAMP_LTZ(ts_ms, 3), WATERMARK FOR rt AS rt - INTERVAL '0.001' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')"""
# the previous price of the symbol (MATCH_RECOGNIZE's PREV inside DEFINE works too, but the depth
# needs the price before the first falling tick); the first tick has none, so it is neither D
# nor U, as Reprise's first tick (change 0) only ever precedes the first V
TICKS_PREV = """CREATE TEMPORARY VIEW ticks_prev AS SELECT symbol, price, rt,
  LAG(price) OVER (PARTITION BY symbol ORDER BY rt) AS prev_price FROM ticks"""
V_SHAPES = """CREATE TEMPORARY VIEW query_rows AS SELECT * FROM ticks_prev MATCH_RECOGNIZE (
  PARTITION BY symbol ORDER BY rt
  MEASURES FIRST(D.rt) AS v_start, U.rt AS v_up, FIRST(D.prev_price) - LAST(D.price) AS depth,
           MATCH_ROWTIME() AS rowtime
  ONE ROW PER MATCH
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (D+ U)
  DEFINE D AS D.price < D.prev_price, U AS U.price >= U.prev_price)"""
V_SHAPES_ROWS = """SELECT symbol, CAST(v_start AS STRING), CAST(v_up AS STRING), depth
  FROM query_rows"""
V_SHAPES_SUMMARY = {"match_count": "COUNT(*)", "depth_sum": "SUM(depth)"}

VITALS = """CREATE TABLE vitals (patient_id STRING, heart_rate BIGINT, spo2 BIGINT, seq BIGINT,
  ts_ms BIGINT, rt AS TO_TIMESTAMP_LTZ(ts_ms, 3),
  WATERMARK FOR rt AS rt - INTERVAL '{delay}' SECOND(3, 3))
  WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')"""
HOP = """CREATE TEMPORARY VIEW query_rows AS SELECT patient_id, window_start AS hop_start,
  window_end AS hop_end, window_time AS rowtime, COUNT(*) AS readings,
  AVG(CAST(heart_rate AS DOUBLE)) AS hr_avg, MIN(heart_rate) AS hr_min, MAX(heart_rate) AS hr_max
  FROM TABLE(HOP(TABLE vitals, DESCRIPTOR(rt), INTERVAL '5' SECOND, INTERVAL '500' SECOND(3)))
  GROUP BY patient_id, window_start, window_end, window_time"""
HOP_ROWS = """SELECT patient_id, CAST(hop_start AS STRING), CAST(hop_end AS STRING),
  readings, hr_avg, hr_min, hr_max FROM query_rows"""
HOP_SUMMARY = {"window_count": "COUNT(*)", "readings_sum": "SUM(readings)",
               "hr_min_sum": "SUM(hr_min)", "hr_max_sum": "SUM(hr_max)"}

# one tumbling window over all the rows (the recordings span hours of 2026): it closes at the end
# of the input, when the bounded source's last watermark passes it
SUMMARY = """SELECT {columns} FROM TABLE(TUMBLE(TABLE query_rows, DESCRIPTOR(rowtime),
  INTERVAL '3650' DAY(4))) GROUP BY window_start, window_end"""


def environment(parallelism: int) -> TableEnvironment:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", str(parallelism))
    env.get_config().set("table.local-time-zone", "UTC")
    return env


def run(query: str, path: str, parallelism: int, delay: float,
        check: str | None) -> tuple[list[tuple], float]:
    """The summary row (or, with ``check``, every row written there) and the query's seconds."""
    env = environment(parallelism)
    if query == "v_shapes":
        env.execute_sql(TICKS.format(path=path))
        env.execute_sql(TICKS_PREV)
        env.execute_sql(V_SHAPES)
        rows_sql, summary = V_SHAPES_ROWS, V_SHAPES_SUMMARY
    else:
        env.execute_sql(VITALS.format(path=path, delay=f"{delay:g}"))
        env.execute_sql(HOP)
        rows_sql, summary = HOP_ROWS, HOP_SUMMARY
    started = time.perf_counter()
    sql = rows_sql if check else SUMMARY.format(
        columns=", ".join(f"{sql} AS {name}" for name, sql in summary.items()))
    with env.execute_sql(sql).collect() as results:
        rows = [tuple(row) for row in results]
    seconds = time.perf_counter() - started
    if check:
        with open(check, "w", newline="") as f:
            csv.writer(f).writerows(sorted(rows))
    return rows, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("query", choices=["v_shapes", "hop"])
    parser.add_argument("csv", help="the CSV file written by export_recording")
    parser.add_argument("--check", metavar="OUT.csv", help="write every row there")
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--delay", type=float, default=10.0,
                        help="hop: watermark delay in seconds, under 1000 (Reprise's lateness)")
    args = parser.parse_args()
    rows, seconds = run(args.query, args.csv, args.parallelism, args.delay, args.check)
    total = time.perf_counter() - STARTED
    if args.check:
        print(f"{args.query}: {len(rows):,} rows -> {args.check}")
    else:
        names = V_SHAPES_SUMMARY if args.query == "v_shapes" else HOP_SUMMARY
        print(f"{args.query}: " + ", ".join(
            f"{name} {value}" for name, value in zip(names, rows[0], strict=True)))
    print(f"{args.query}: {seconds:.1f} s in Flink (JVM start excluded), {total:.1f} s for the "
          "whole script (JVM start included)")


if __name__ == "__main__":
    main()

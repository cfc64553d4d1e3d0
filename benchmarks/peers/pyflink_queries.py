"""PyFlink peers of two Reprise queries, over a recording exported by ``export_recording``.

Run with PyFlink's own interpreter (never the project's venv), e.g.::

    python3 -m venv /tmp/flinkvenv && /tmp/flinkvenv/bin/pip install apache-flink
    JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64 /tmp/flinkvenv/bin/python \\
        benchmarks/peers/pyflink_queries.py v_shapes /tmp/peer/ticks.csv
    ... pyflink_queries.py hop /tmp/peer/vitals.csv

``v_shapes``: ``ticks_v_shapes`` as MATCH_RECOGNIZE per symbol in event-time order (a V is one or
more falling ticks then one or more non-falling ticks; the match ends at the next fall, which
starts the next V); one row per V with its depth (the fall from the price before the first
falling tick to the lowest one). ``hop``: the sliding benchmark's windows (500 s every 5 s,
count/avg/min/max of heart rate per patient, 10 s allowed lateness) as a HOP window TVF. Both run
in batch-style streaming mode over the bounded file (parallelism 2) and collect their rows; the
script prints the rows and seconds (job submission included, JVM start excluded).
"""

from __future__ import annotations

import sys
import time

from pyflink.table import EnvironmentSettings, TableEnvironment

TICKS = """CREATE TABLE ticks (symbol STRING, price DOUBLE, volume BIGINT, seq BIGINT,
  ts_ms BIGINT, rt AS TO_TIMESTAMP_LTZ(ts_ms, 3), WATERMARK FOR rt AS rt)
  WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')"""
V_SHAPES = """SELECT symbol, CAST(v_start AS STRING), CAST(v_end AS STRING), depth
  FROM ticks MATCH_RECOGNIZE (
  PARTITION BY symbol ORDER BY rt
  MEASURES FIRST(D.rt) AS v_start, LAST(U.rt) AS v_end,
           FIRST(D.prev_price) - LAST(D.price) AS depth
  ONE ROW PER MATCH
  AFTER MATCH SKIP TO LAST U
  PATTERN (D+ U+ E)
  DEFINE D AS D.price < D.prev_price, U AS U.price >= U.prev_price,
         E AS E.price < E.prev_price)"""
VITALS = """CREATE TABLE vitals (patient_id STRING, heart_rate BIGINT, spo2 BIGINT, seq BIGINT,
  ts_ms BIGINT, rt AS TO_TIMESTAMP_LTZ(ts_ms, 3), WATERMARK FOR rt AS rt - INTERVAL '10' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')"""
HOP = """SELECT patient_id, CAST(window_start AS STRING), CAST(window_end AS STRING),
  COUNT(*) AS readings,
  AVG(CAST(heart_rate AS DOUBLE)) AS hr_avg, MIN(heart_rate) AS hr_min, MAX(heart_rate) AS hr_max
  FROM TABLE(HOP(TABLE vitals, DESCRIPTOR(rt), INTERVAL '5' SECOND, INTERVAL '500' SECOND(3)))
  GROUP BY patient_id, window_start, window_end"""


def run(query: str, path: str) -> tuple[int, float]:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "2")
    if query == "v_shapes":
        env.execute_sql(TICKS.format(path=path))
        # the previous price of the symbol (MATCH_RECOGNIZE's PREV inside DEFINE works too,
        # but the depth needs the price before the first falling tick)
        env.execute_sql("""CREATE TEMPORARY VIEW ticks_prev AS SELECT symbol, price, rt,
          LAG(price) OVER (PARTITION BY symbol ORDER BY rt) AS prev_price FROM ticks""")
        sql = V_SHAPES.replace("FROM ticks MATCH", "FROM ticks_prev MATCH")
    else:
        env.execute_sql(VITALS.format(path=path))
        sql = HOP
    started = time.perf_counter()
    with env.execute_sql(sql).collect() as rows:
        count = sum(1 for _ in rows)
    return count, time.perf_counter() - started


if __name__ == "__main__":
    rows, seconds = run(sys.argv[1], sys.argv[2])
    print(f"{sys.argv[1]}: {rows:,} rows in {seconds:.1f} s")

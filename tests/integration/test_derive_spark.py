"""The workers' derived-column evaluator (engine.derive) against Spark SQL on the same data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.derive import compile_derived
from engine.derive_values import DeriveError

COLUMNS = {"k": "string", "v": "int", "p": "double", "flag": "bool"}
OVER = "over (partition by k order by __seq)"
EXPRESSIONS = {
    "d_lag": (f"v - lag(v) {OVER}", "int"),
    "d_lag3": (f"lag(p, 3, -1.5e0) {OVER}", "double"),
    "d_round": (f"coalesce(round(p - lag(p) {OVER}, 2), 0)", "double"),
    "d_sum": (f"sum(v) {OVER}", "int"),
    "d_sum_p": ("sum(p) over (partition by k order by __seq rows between unbounded "
                "preceding and current row)", "double"),
    "d_avg": (f"avg(v) {OVER}", "double"),
    "d_min": (f"min(p) {OVER}", "double"),
    "d_max": (f"max(v) {OVER}", "int"),
    "d_count": (f"count(v) {OVER} + count(*) {OVER}", "int"),
    "d_rank": (f"row_number() {OVER} * 10 + dense_rank() {OVER}", "int"),
    "d_first": (f"first_value(p) {OVER}", "double"),
    "d_case": ("case when v > 50 then p * 2.5 when v is null then -1 else p / 4 end", "double"),
    "d_logic": ("(v > 30 and p < 0.5) or (flag and not v between 10 and 20) or v in (1, 2, 3)",
                "bool"),
    "d_misc": ("greatest(v, 17, nullif(v, 40)) + abs(v - 50) + v % 7 + pmod(v, 5) * 0", "int"),
    "d_math": ("if(flag, sqrt(p), sign(p - 0.5)) + least(p, 0.25) + cast(v as double)",
               "double"),
    "d_chain": (f"coalesce(d_lag, 0) + lag(d_sum, 1, 0) {OVER}", "int"),
}


def events(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    v = pd.array(rng.integers(0, 100, n), dtype="Int64")
    v[rng.random(n) < 0.15] = pd.NA
    scale = 10.0 ** rng.integers(1, 5, n)
    p = np.floor(rng.random(n) * scale) / scale + rng.choice([0, 0.005, 0.00005], n)
    p[rng.random(n) < 0.1] = np.nan
    keys = pd.Series(rng.choice(["a", "b", "c", None], n, p=[0.4, 0.3, 0.25, 0.05]),
                     dtype=object)
    flag = pd.Series(rng.random(n) < 0.5, dtype=object)
    flag[rng.random(n) < 0.1] = None
    return pd.DataFrame({"k": keys, "v": v, "p": p, "flag": flag,
                         "__seq": np.arange(n, dtype="int64")})


def spark_values(spark, frame: pd.DataFrame, derived: dict) -> pd.DataFrame:
    from pyspark.sql import functions as F

    rows = frame.astype(object).where(frame.notna(), None)
    df = spark.createDataFrame(rows.values.tolist(),
                               "k string, v bigint, p double, flag boolean, __seq bigint")
    types = {"int": "bigint", "double": "double", "bool": "boolean"}
    for name, (sql, declared) in derived.items():
        df = df.withColumn(name, F.expr(sql).cast(types[declared]))
    return df.orderBy("__seq").toPandas()


def test_evaluator_equals_spark_sql_in_any_batch_split(spark):
    """Every supported construct, nulls in keys and values, values on rounding halves; the
    evaluator run over random batch splits gives exactly Spark's values (NaN is null)."""
    frame = events(3, 400)
    expected = spark_values(spark, frame, EXPRESSIONS)
    program = compile_derived(EXPRESSIONS, COLUMNS, "k")
    rng = np.random.default_rng(7)
    for _ in range(3):
        cuts = np.sort(rng.integers(0, len(frame), 4))
        state, parts = program.init(), []
        for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(frame)], strict=True):
            derived, state = program.step(state, frame.iloc[a:b])
            parts.append(pd.DataFrame(derived))
        got = pd.concat(parts).reset_index(drop=True)
        for name in EXPRESSIONS:
            want = expected[name].astype(object).where(expected[name].notna(), None).tolist()
            have = got[name].astype(object).where(got[name].notna(), None).tolist()
            assert have == want, name


@pytest.mark.parametrize(("sql", "declared"), [("v * 9223372036854775807", "int"),
                                                ("p / (v - v)", "double")])
def test_what_fails_in_spark_fails_in_the_evaluator(spark, sql, declared):
    """ANSI mode: integer overflow and division by zero are errors in both."""
    frame = events(5, 50).assign(v=pd.array(range(2, 52), dtype="Int64"))
    with pytest.raises(Exception, match=r"(?i)overflow|divide|division"):
        spark_values(spark, frame, {"x": (sql, declared)})
    program = compile_derived({"x": (sql, declared)}, COLUMNS, "k")
    with pytest.raises(DeriveError):
        program.step(program.init(), frame)

"""Which commands launch Spark's JVM before the command line's modules are imported: a replay
forced onto Spark whose JVM the environment describes, and no other."""

from __future__ import annotations

import pytest

from jobs.cli.entry import forced_onto_spark


@pytest.mark.parametrize(("args", "env", "early"), [
    (["replay", "q", "--engine", "spark"], {}, True),
    (["replay", "q", "--engine=spark"], {}, True),
    (["replay", "q"], {"REPRISE_ENGINE": "spark"}, True),
    (["replay", "q", "--engine", "driver"], {"REPRISE_ENGINE": "spark"}, False),
    (["replay", "q", "--engine", "auto"], {}, False),
    (["replay", "q"], {}, False),
    (["replay", "q", "--engine", "spark", "--backend", "delta-spark"], {}, False),
    (["replay", "q", "--engine", "spark", "--warehouse", "s3://b/p"], {}, False),
    (["replay", "q", "--engine", "spark"], {"REPRISE_WAREHOUSE": "s3://b/p"}, False),
    (["replay", "q", "--engine", "spark", "--warehouse", "/tmp/w"],
     {"REPRISE_WAREHOUSE": "s3://b/p"}, True),
    (["validate", "r", "--engine", "spark"], {}, False),
    (["--verbose", "replay", "q", "--engine", "spark"], {}, False),
    ([], {"REPRISE_ENGINE": "spark"}, False),
    (["replay", "--engine"], {}, False),
])
def test_only_a_replay_forced_onto_spark_with_the_environments_jvm_launches_early(args, env,
                                                                                   early):
    assert forced_onto_spark(args, env) is early

"""``python -m jobs.runtime.make_class_archive``: make the class-data-sharing archive of the
Spark driver JVM's classes (:mod:`jobs.runtime.class_archive`), replacing any."""

from __future__ import annotations

import json
import os
from pathlib import Path

from jobs.runtime import class_archive
from jobs.runtime.spark_session import get_spark

#: How long the JVM may take to write the archive at its exit (s).
DUMP_WAIT_S = 600


def make_archive() -> Path:
    """Make :data:`~jobs.runtime.class_archive.ARCHIVE` (replacing any) from a session that runs
    the jobs a replay runs."""
    archive = class_archive.ARCHIVE
    partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")
    spark = get_spark(conf={"spark.driver.extraJavaOptions":
                            f"-XX:ArchiveClassesAtExit={partial} -Xlog:cds=off "
                            "-Xlog:cds+dynamic=off"})
    sc = spark.sparkContext
    sc.parallelize(range(4), 2).flatMap(lambda x: [x]).collect()  # a replay's bucket tasks
    spark.range(100).selectExpr("id % 3 AS k").groupBy("k").count().collect()  # SQL, shuffle
    jvm = sc._gateway.proc
    spark.stop()
    jvm.stdin.close()  # the JVM exits on end of input, writing the archive
    try:
        jvm.wait(DUMP_WAIT_S)
        if not partial.exists() or partial.stat().st_size == 0:
            raise SystemExit(f"the JVM wrote no class archive at {partial}; Spark starts "
                             "without one")
        class_archive.discard()
        class_archive.NOTE.write_text(json.dumps({"made_for": class_archive.fingerprint(),
                                                  "size": partial.stat().st_size}))
        os.replace(partial, archive)
    finally:
        partial.unlink(missing_ok=True)
    return archive


if __name__ == "__main__":
    print(f"class archive of the Spark driver's JVM: {make_archive()}")

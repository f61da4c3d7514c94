"""A PySpark job whose one task sends SIGTERM to its own executor's JVM: an executor killed
from outside, as an operator's `kill` or a node's shutdown would, with no memory short.

YARN reports it as it reports Spark's OOM hook (exit 143, "Killed by external signal"); only
the executor's log, without an OutOfMemoryError, tells the two apart.

    spark-submit --master yarn --conf spark.task.maxFailures=1 sigterm_job.py
"""

from __future__ import annotations


def _jvm_of(pid: int) -> int:
    """The nearest ancestor that is a java process (the executor: python worker <- daemon <-
    executor JVM)."""
    while pid > 1:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        parent = int(fields[1])
        with open(f"/proc/{parent}/comm") as comm:
            if comm.read().strip() == "java":
                return parent
        pid = parent
    raise RuntimeError("no executor JVM above this worker")


def _kill_executor(index: int) -> int:
    import os
    import signal
    import time

    os.kill(_jvm_of(os.getpid()), signal.SIGTERM)
    time.sleep(60)  # the executor's shutdown ends this worker
    return index


def main() -> None:
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    print("RESULT", spark.sparkContext.parallelize([0], 1).map(_kill_executor).collect())
    spark.stop()


if __name__ == "__main__":
    main()

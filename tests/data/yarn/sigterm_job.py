"""A PySpark job whose one task sends SIGTERM to its own executor's JVM: an executor killed
from outside, as an operator's `kill` or a node's shutdown would, with no memory short.

YARN reports it as it reports Spark's OOM hook (exit 143, "Killed by external signal"); only
the executor's log, without an OutOfMemoryError, tells the two apart.

`--says-oom-below-mb N`: at an executor heap below N MB the task first writes the line the
JVM writes before its OOM hook's kill to the container's stderr, so the kill reads as the
hook's, on demand (a real OOM ends either by the hook or by Spark's own exit 52, a race in
the executor's JVM); at N MB or more it succeeds.

    spark-submit --master yarn --conf spark.task.maxFailures=1 sigterm_job.py
"""

from __future__ import annotations

import argparse

OOM_LINE = "java.lang.OutOfMemoryError: Java heap space\n"  # what the JVM writes before the hook


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


def _say_oom() -> None:
    """Write the JVM's OOM line through the executor's own stderr (a worker's stderr is a pipe
    its JVM copies to the container's stderr file) and wait until the file holds it: a line
    appended to the file directly, at an offset of its own, the JVM's shutdown lines would
    overwrite."""
    import os
    import sys
    import time

    print(OOM_LINE, end="", file=sys.stderr, flush=True)
    path = os.path.join(os.environ["LOG_DIRS"].split(",")[0], "stderr")
    ends = time.monotonic() + 60
    while time.monotonic() < ends:
        with open(path, errors="replace") as stderr:
            if OOM_LINE in stderr.read():
                return
        time.sleep(0.1)
    raise RuntimeError(f"the OOM line never reached {path}")


def _kill_executor(index: int, says_oom: bool) -> int:
    import os
    import signal
    import time

    if says_oom:
        _say_oom()
    os.kill(_jvm_of(os.getpid()), signal.SIGTERM)
    time.sleep(60)  # the executor's shutdown ends this worker
    return index


def _heap_mb(text: str) -> int:
    """A JVM memory setting (`512m`, `1g`, `1024`: MB) in MB."""
    units = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
    last = text.strip().lower()[-1:]
    return int(float(text.strip()[:-1]) * units[last]) if last in units else int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--says-oom-below-mb", type=int, default=0,
                        help="below this executor heap, the kill reads as the OOM hook's")
    args = parser.parse_args()

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    heap_mb = _heap_mb(spark.sparkContext.getConf().get("spark.executor.memory", "1g"))
    if args.says_oom_below_mb and heap_mb >= args.says_oom_below_mb:
        print("RESULT", spark.sparkContext.parallelize([0], 1).collect())
    else:
        says_oom = bool(args.says_oom_below_mb)
        rows = spark.sparkContext.parallelize([0], 1).map(lambda i: _kill_executor(i, says_oom))
        print("RESULT", rows.collect())
    spark.stop()


if __name__ == "__main__":
    main()

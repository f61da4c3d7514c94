"""A PySpark job whose one task fills more memory than its executor's YARN container holds.

The task's Python worker writes `--mb` MB (written, not just reserved: the NodeManager measures
resident memory) and holds them, so the NodeManager kills the executor's container for exceeding
its physical memory; with spark.task.maxFailures=1 the job then fails at once.

`--go-file PATH`: the task waits until PATH exists before it fills, so a test can see the
executor's container on the RM first (the kill follows the fill within seconds, and a test
that looked later found the app already gone).

    spark-submit --master yarn --conf spark.task.maxFailures=1 memory_hog_job.py --mb 1200
"""

from __future__ import annotations

import argparse
import time


def fill(mb: int, hold_s: float, go_file: str) -> int:
    import os

    waited = time.monotonic() + 600
    while go_file and not os.path.exists(go_file) and time.monotonic() < waited:
        time.sleep(0.2)
    block = b"x" * (mb << 20)
    time.sleep(hold_s)
    return len(block)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1200, help="MB the task fills")
    parser.add_argument("--hold-s", type=float, default=60.0, help="how long it holds them")
    parser.add_argument("--go-file", default="", help="fill only once this file exists")
    args = parser.parse_args()

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    mb, hold_s, go_file = args.mb, args.hold_s, args.go_file
    spark.sparkContext.parallelize([0], 1).map(lambda _: fill(mb, hold_s, go_file)).collect()
    spark.stop()


if __name__ == "__main__":
    main()

"""A PySpark job whose one task fills more memory than its executor's YARN container holds.

The task's Python worker writes `--mb` MB (written, not just reserved: the NodeManager measures
resident memory) and holds them, so the NodeManager kills the executor's container for exceeding
its physical memory; with spark.task.maxFailures=1 the job then fails at once.

    spark-submit --master yarn --conf spark.task.maxFailures=1 memory_hog_job.py --mb 1200
"""

from __future__ import annotations

import argparse
import time


def fill(mb: int, hold_s: float) -> int:
    block = b"x" * (mb << 20)
    time.sleep(hold_s)
    return len(block)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1200, help="MB the task fills")
    parser.add_argument("--hold-s", type=float, default=60.0, help="how long it holds them")
    args = parser.parse_args()

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    mb, hold_s = args.mb, args.hold_s
    spark.sparkContext.parallelize([0], 1).map(lambda _: fill(mb, hold_s)).collect()
    spark.stop()


if __name__ == "__main__":
    main()

"""A PySpark job whose one aggregation task holds `--longs` longs in a `collect_list`.

Its JVM heap fills with the list (boxed longs in the aggregation buffer): at Spark's 512 MB
heap the executor dies with `java.lang.OutOfMemoryError: Java heap space` (exit 52); at a
heap a few times larger it succeeds.

    spark-submit --master yarn oom_job.py --longs 15000000
"""

from __future__ import annotations

import argparse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--longs", type=int, default=15_000_000, help="longs the task holds")
    args = parser.parse_args()

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = SparkSession.builder.getOrCreate()
    one = spark.range(0, args.longs, 1, 1).withColumn("k", F.col("id") * 0)
    rows = one.groupBy("k").agg(F.collect_list("id").alias("l"))
    print("RESULT", rows.select(F.size("l")).collect()[0][0])
    spark.stop()


if __name__ == "__main__":
    main()

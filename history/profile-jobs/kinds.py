"""The job kinds of the resource-profile recordings: each stresses one resource of a node.

    spark-submit --master spark://127.0.0.1:7077 kinds.py cpu [--size 1.0] [--scratch DIR]

* cpu: SHA-256 of many numbers in the JVM (whole-stage code generation): the cores.
* shuffle: wide rows regrouped by key, twice: serialisation, shuffle files, the loopback network.
* disk: rows written as uncompressed text to `--scratch`, then read back and filtered: bytes
  through the file system.
* memory: a wide table cached in the executors' memory and aggregated again and again: memory
  and the garbage collector.
* wait: tasks that mostly sleep (a remote service's latency) and compute a little: neither.

The work is in the JVM (DataFrame expressions), so the event log's task metrics see it (a
Python worker's CPU is not in `Executor CPU Time`); only `wait` runs Python in its tasks.
`--size` scales the work. Prints one JSON line: {"job", "app_id", "elapsed_s"}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time

KINDS = ("cpu", "shuffle", "disk", "memory", "wait")


def cpu(spark, size: float) -> int:
    rows = int(5_000_000 * size)
    df = spark.range(0, rows, 1, 8).selectExpr("sha2(cast(id * 7919 as string), 256) AS h")
    return df.filter("h LIKE '0%'").count()


def shuffle(spark, size: float) -> int:
    rows = int(1_500_000 * size)
    df = spark.range(0, rows, 1, 8).selectExpr(
        "id % 40000 AS k", "concat(uuid(), uuid(), uuid()) AS v")
    once = df.repartition(8, "k").groupBy("k").agg({"v": "max"})
    twice = df.repartition(8, "v").selectExpr("k", "length(v) AS n").groupBy("k").sum("n")
    return once.count() + twice.count()


def disk(spark, size: float, scratch: str) -> int:
    rows = int(2_500_000 * size)
    path = os.path.join(tempfile.mkdtemp(prefix="cobell-disk-", dir=scratch), "t")
    try:
        spark.range(0, rows, 1, 8).selectExpr(
            "concat(cast(id AS string), repeat('d', 100)) AS value"
        ).write.mode("overwrite").text(path)
        return spark.read.text(path).filter("value LIKE '%7d%'").count()
    finally:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def memory(spark, size: float) -> int:
    rows = int(600_000 * size)
    df = spark.range(0, rows, 1, 8).selectExpr(
        "id", "id % 1000 AS k", "repeat(cast(id AS string), 12) AS a",
        "array_repeat(id, 24) AS b").cache()
    total = df.count()
    for i in range(6):
        total += df.filter(f"id % 7 = {i}").selectExpr("k", "size(b) AS n",
                                                       "length(a) AS m").groupBy("k").sum(
            "n", "m").count()
    df.unpersist()
    return total


def wait(spark, size: float) -> int:
    tasks, sleep_s = 16, 1.5 * size

    def part(it):
        time.sleep(sleep_s)
        return [sum(x * x for x in it)]

    return len(spark.sparkContext.parallelize(range(16_000), tasks).mapPartitions(part).collect())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--size", type=float, default=1.0)
    parser.add_argument("--scratch", default=tempfile.gettempdir())
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.config("spark.sql.shuffle.partitions", "8").config(
        "spark.sql.adaptive.enabled", "false").getOrCreate()
    t0 = time.time()
    if args.kind == "disk":
        result = disk(spark, args.size, args.scratch)
    else:
        result = globals()[args.kind](spark, args.size)
    print(json.dumps({"job": f"prof-{args.kind}", "app_id": spark.sparkContext.applicationId,
                      "result": result, "elapsed_s": round(time.time() - t0, 3)}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()

"""The target job of the real co-location runs: a map stage, a shuffle, a reduce stage.

Each of `--tasks` map tasks spins the CPU for `--cpu-s` seconds (the part a co-runner slows
down on a small machine), sleeps for `--sleep-s` seconds (standing in for I/O waits, which do
not compete for the cores, so the job scales with executors even on 2 cores) and emits
`--records` small records; a shuffle regroups them by key into `--reducers` reduce tasks.

    spark-submit --master spark://127.0.0.1:7077 target.py --tasks 24

Prints one JSON line: {"job": "colo-target", "app_id": ..., "elapsed_s": ...}.
"""

from __future__ import annotations

import argparse
import json
import time


def work(task: int, cpu_s: float, sleep_s: float, records: int) -> list[tuple[int, int]]:
    end = time.perf_counter() + cpu_s
    x = task
    while time.perf_counter() < end:
        x = (x * 1103515245 + 12345) % 2147483648
    time.sleep(sleep_s)
    return [((x + i) % 997, i) for i in range(records)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=24)
    parser.add_argument("--cpu-s", type=float, default=0.6)
    parser.add_argument("--sleep-s", type=float, default=1.6)
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--reducers", type=int, default=4)
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    sc = spark.sparkContext
    t0 = time.time()
    cpu_s, sleep_s, records = args.cpu_s, args.sleep_s, args.records
    groups = (
        sc.parallelize(range(args.tasks), args.tasks)
        .flatMap(lambda t: work(t, cpu_s, sleep_s, records))
        .reduceByKey(lambda a, b: a + b, args.reducers)
        .count()
    )
    summary = {"job": "colo-target", "app_id": sc.applicationId, "groups": groups,
               "elapsed_s": round(time.time() - t0, 3)}
    print(json.dumps(summary), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()

"""A CPU-heavy PySpark co-runner: occupies executors and the CPU to create interference.

Every task spins the CPU for `--task-s` seconds; with `--tasks` equal to its slots it holds
them for about `--task-s` seconds, `--rounds` times. `--until-file PATH`: each task stops
spinning once PATH exists (a path every executor sees), at the latest after `--task-s`: a
co-runner that holds the cluster until whoever measures beside it is done.

    spark-submit --master spark://127.0.0.1:7077 corunner_job.py --tasks 2 --task-s 30
"""

from __future__ import annotations

import argparse
import json
import time


def spin(task_s: float, until_file: str = "") -> int:
    import os

    end = time.perf_counter() + task_s
    look = time.perf_counter()
    n = 0
    while (now := time.perf_counter()) < end:
        if until_file and now >= look:
            if os.path.exists(until_file):
                break
            look = now + 0.5
        n += 1
    return n


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=2, help="parallel CPU-bound tasks")
    parser.add_argument("--task-s", type=float, default=30.0, help="seconds each task spins")
    parser.add_argument("--rounds", type=int, default=1, help="how many times to repeat")
    parser.add_argument("--until-file", default="",
                        help="stop spinning once this file exists (at most --task-s)")
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    sc = spark.sparkContext
    t0 = time.time()
    task_s, until_file = args.task_s, args.until_file
    loops = 0
    for _ in range(args.rounds):
        tasks = sc.parallelize(range(args.tasks), args.tasks)
        loops += tasks.map(lambda _: spin(task_s, until_file)).sum()
    print(
        json.dumps(
            {
                "job": "corunner_job",
                "app_id": sc.applicationId,
                "loops": loops,
                "elapsed_s": round(time.time() - t0, 3),
            }
        ),
        flush=True,
    )
    spark.stop()


if __name__ == "__main__":
    main()

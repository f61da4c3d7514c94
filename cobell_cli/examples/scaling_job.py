"""A PySpark job whose runtime really depends on its scale-out, even on a 2-core laptop.

It runs `--tasks` tasks; each spins the CPU for `--cpu-fraction` of `--task-s` seconds and
sleeps for the rest, standing in for I/O. Tasks run in waves of (executors x cores), so the
runtime is about ceil(tasks / slots) * task_s plus Spark's start-up: a real scale-out curve,
because the sleeping part does not compete for the few physical cores, while the spinning part
is what a CPU-heavy co-runner slows down.

    spark-submit --master spark://127.0.0.1:7077 scaling_job.py --tasks 16 --task-s 1.5

Prints one JSON line: {"job": "scaling_job", "app_id": ..., "tasks": ..., "elapsed_s": ...}.
"""

from __future__ import annotations

import argparse
import json
import time


def busy_then_sleep(task_s: float, cpu_fraction: float) -> float:
    """Spin for the CPU share, sleep for the rest; returns the CPU seconds really spent."""
    cpu_s = task_s * cpu_fraction
    t0 = time.process_time()
    end = time.perf_counter() + cpu_s
    x = 0.0
    while time.perf_counter() < end:
        x = (x * 1.000001 + 1.0) % 1e6
    time.sleep(max(0.0, task_s - cpu_s))
    return time.process_time() - t0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=16, help="amount of work: number of tasks")
    parser.add_argument("--task-s", type=float, default=1.5, help="seconds per task")
    parser.add_argument("--cpu-fraction", type=float, default=0.3, help="CPU share of a task")
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()  # the name comes from spark-submit --name
    sc = spark.sparkContext
    t0 = time.time()
    task_s, fraction = args.task_s, args.cpu_fraction
    cpu_s = (
        sc.parallelize(range(args.tasks), args.tasks)
        .map(lambda _: busy_then_sleep(task_s, fraction))
        .sum()
    )
    summary = {
        "job": "scaling_job",
        "app_id": sc.applicationId,
        "tasks": args.tasks,
        "task_s": task_s,
        "cpu_s": round(cpu_s, 3),
        "elapsed_s": round(time.time() - t0, 3),
    }
    print(json.dumps(summary), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()

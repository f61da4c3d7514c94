"""A shuffle-heavy co-runner: rounds of generating records and regrouping them all by key.

Every round writes and reads `--records` records of `--payload` bytes through Spark's shuffle
(serialisation on the CPU, shuffle files on the local disk), `--rounds` times.

    spark-submit --master spark://127.0.0.1:7077 shuffle.py --rounds 4
"""

from __future__ import annotations

import argparse
import json
import time


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--records", type=int, default=400000)
    parser.add_argument("--payload", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=8)
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    sc = spark.sparkContext
    t0 = time.time()
    payload, parts = "x" * args.payload, args.partitions
    total = 0
    for r in range(args.rounds):
        total += (
            sc.parallelize(range(args.records), parts)
            .map(lambda i, r=r: ((i * 7919 + r) % 50021, payload))
            .groupByKey(parts)
            .mapValues(len)
            .count()
        )
    print(json.dumps({"job": "colo-shuffle", "app_id": sc.applicationId, "groups": total,
                      "elapsed_s": round(time.time() - t0, 3)}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()

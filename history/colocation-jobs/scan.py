"""A scan-heavy co-runner: rounds of reading a text file and filtering its lines.

Every round reads the whole `INPUT` (written once by the recording script) and counts the
lines matching a pattern: reading, decoding and matching, no shuffle.

    spark-submit --master spark://127.0.0.1:7077 scan.py /tmp/colo/scan-input.txt --rounds 3
"""

from __future__ import annotations

import argparse
import json
import time


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=8)
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    sc = spark.sparkContext
    t0 = time.time()
    matches = 0
    for _ in range(args.rounds):
        lines = sc.textFile(args.input, args.partitions)
        matches += lines.filter(lambda line: "7" in line[:12] and line.endswith("a")).count()
    print(json.dumps({"job": "colo-scan", "app_id": sc.applicationId, "matches": matches,
                      "elapsed_s": round(time.time() - t0, 3)}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()

"""Record one small real Spark event log per codec cobell reads (plain, zstd, lz4, snappy) into
tests/data/eventlogs/codecs/, with spark-submit from the pyspark wheel in local mode.

Run from the repository root: `.venv/bin/python tests/data/eventlogs/record_codecs.py`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pyspark

HERE = Path(__file__).parent / "codecs"
JOB = """
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
rdd = spark.sparkContext.parallelize(range(20000), 4)
print(rdd.map(lambda v: (v % 7, v)).reduceByKey(lambda a, b: a + b).count())
spark.stop()
"""


def record(codec: str | None, out: Path) -> None:
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job.py"
        job.write_text(JOB)
        logs = Path(tmp) / "logs"
        logs.mkdir()
        conf = {
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": logs.as_uri(),
            "spark.eventLog.compress": "false" if codec is None else "true",
            "spark.eventLog.rolling.enabled": "false",
            "spark.ui.enabled": "false",
        }
        if codec:
            conf["spark.eventLog.compression.codec"] = codec
        args = [str(submit), "--master", "local[2]", "--name", f"codec-{codec or 'plain'}"]
        for key, value in conf.items():
            args += ["--conf", f"{key}={value}"]
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
        subprocess.run([*args, str(job)], check=True, env=env, capture_output=True)
        (log,) = logs.iterdir()
        shutil.copy(log, out / log.name)


if __name__ == "__main__":
    HERE.mkdir(exist_ok=True)
    for codec in (None, "zstd", "lz4", "snappy"):
        record(codec, HERE)
    print("\n".join(sorted(p.name for p in HERE.iterdir())))

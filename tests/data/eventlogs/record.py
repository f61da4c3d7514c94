"""Record small real Spark event logs on a local standalone cluster (for the import tests).

    flock /tmp/cobell-spark.lock .venv/bin/python tests/data/eventlogs/record.py

Starts `cobell local-cluster`'s code (2 workers x 2 cores, free loopback ports), runs five
tiny PySpark apps with event logging on (zstd-compressed, Spark's default codec), then stops
the cluster. Two apps run at the same time so that they overlap. The logs land in
tests/data/eventlogs/logs/ (~35 KB each); the script's output lists them.

apps: `etl` (spark.yarn.tags cobell-job:etl, 2 executors), `adhoc report` (2 executors,
concurrent with etl), `cobell:pi` (1 executor), `broken` (a job that fails; the driver
exits non-zero), `crashed` (killed with SIGKILL mid-run: its log stays `.inprogress`, without
an end event). `etl`, `broken` and `crashed` write single-file logs, the others rolling
(`eventlog_v2_*`) logs, Spark 4's default.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from cobell_cli.run.local_cluster import LocalCluster, find_spark_home  # noqa: E402

OUT = Path(__file__).resolve().parent / "logs"

APP = """
import sys, time
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
sc = spark.sparkContext
kind = sys.argv[1]
if kind == "fail":
    sc.parallelize(range(8), 4).map(lambda x: 1 // (x - x)).count()
rdd = sc.parallelize(range(200_000), 8).map(lambda x: (x % 97, x))
print(rdd.reduceByKey(lambda a, b: a + b).count())
time.sleep(float(sys.argv[2]))
print(sc.parallelize(range(50_000), 4).map(lambda x: x * x).sum())
spark.stop()
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def submit(
    master: str, script: Path, name: str, executors: int, *args: str, conf=()
) -> subprocess.Popen:
    argv = [str(find_spark_home() / "bin" / "spark-submit"), "--master", master,
            "--name", name, "--total-executor-cores", str(executors), "--executor-cores", "1",
            "--executor-memory", "512m", "--driver-memory", "512m",
            "--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir=file://{OUT}",
            "--conf", "spark.eventLog.compress=true",
            "--conf", "spark.ui.enabled=false"]  # fmt: skip
    for item in conf:
        argv += ["--conf", item]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("SPARK_CONF_DIR", None)
    return subprocess.Popen([*argv, str(script), *args], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip


def main() -> int:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "app.py"
        script.write_text(APP)
        cluster = LocalCluster(Path(tmp) / "cluster")
        cluster.start(workers=2, cores_per_worker=2, memory_per_worker="2g",
                      port=free_port(), webui_port=free_port(), timeout_s=180)  # fmt: skip
        try:
            master = cluster.master_url
            single = ["spark.eventLog.rolling.enabled=false"]  # Spark 4 rolls by default
            tags = ["spark.yarn.tags=cobell-job:etl,nightly", *single]
            etl = submit(master, script, "etl", 2, "ok", "6", conf=tags)
            time.sleep(4)
            report = submit(master, script, "adhoc report", 2, "ok", "1")
            codes = [etl.wait(), report.wait()]
            codes.append(submit(master, script, "cobell:pi", 1, "ok", "0").wait())
            codes.append(submit(master, script, "broken", 2, "fail", "0", conf=single).wait())
            crashed = submit(master, script, "crashed", 1, "ok", "120", conf=single)
            time.sleep(25)  # well into its sleep: started, executors up, no end event yet
            os.killpg(crashed.pid, signal.SIGKILL)  # no shutdown hook: the log stays in progress
            codes.append(crashed.wait())
        finally:
            cluster.stop()
    print("exit codes (etl, adhoc report, cobell:pi, broken, crashed):", codes)
    for path in sorted(OUT.rglob("*")):
        if path.is_file():
            print(f"{path.relative_to(OUT)}  {path.stat().st_size} bytes")
    return 0 if codes[:3] == [0, 0, 0] and codes[3] != 0 and codes[4] == -9 else 1


if __name__ == "__main__":
    raise SystemExit(main())

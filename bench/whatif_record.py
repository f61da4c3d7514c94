"""Record the real Spark event logs the what-if benchmark (bench/whatif.py) predicts from.

    COBELL_QUIET_LOCK=/tmp/cobell-quiet.lock .venv/bin/python -m bench.whatif_record \
        [--executors 1 2 ... 8] [--reps 1 2] [--shapes wide join straggler iterative]

Every run waits for a quiet machine (bench/quiet.py: 1-minute load below 1.5, the lock named by
COBELL_QUIET_LOCK held alone); its load is written beside it in the manifest.

Starts `cobell local-cluster`'s code on free loopback ports (2 workers x 4 cores, so 8
one-core executors fit; Spark only counts the cores, the machine has 2), runs every
(shape, executors, repetition) once as a PySpark app with `--total-executor-cores N
--executor-cores 1`, event logging on (single-file logs, zstd: Spark's default codec), in a
shuffled order (seeded) so that a drift in the machine's load does not line up with the
executor count, then stops the cluster. Logs land in bench/data/whatif/ as
`<shape>-x<N>-r<rep>.zstd` (the app id stays inside), with manifest.json: per log the shape,
executors, repetition, the load averages before and after the run, and the wall time.

The job shapes. Every task is a sleep with a small CPU part (a busy loop), so the work scales
with executors on a 2-core machine while executor start-up and the CPU parts still contend
for the host, as they would on a crowded node:

* wide: one stage of 64 equal tasks (3.0 s sleep + 0.05 s CPU).
* join: several stages with a shuffle and a join: A (32 tasks, 2.5 s) is reduced by key
  and joined with B (16 tasks, 2.5 s) into 16 partitions (2.0 s each), then repartitioned
  into 8 (2.0 s each). PySpark's join is a union and a groupByKey, so Spark plans four
  stages: A's map side (32 tasks); A's reduce side with B (16 + 16 tasks); the join (16);
  the repartition (8).
* straggler: one stage of 32 tasks, 31 of 2.5 s and one (the sixth) of 30 s: from 3-4
  executors on, the straggler bounds the stage.
* iterative: 16 iterations of driver work (2.0 s sleep + 0.1 s CPU in the driver) followed
  by a small stage of 8 tasks of 1.0 s, collected by the driver.

At one executor a run takes about 2-3.5 minutes, at eight about one: the tasks' work
dominates start-up (10-40 s on this machine, more the more executors start at once).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "data" / "whatif"
SHAPES = ("wide", "join", "straggler", "iterative")
EXECUTORS = tuple(range(1, 9))
REPS = (1, 2)

APP = '''
import sys, time
from pyspark import SparkContext

def work(sleep_s, cpu_s):
    """A task: a small CPU part (a busy loop) then a sleep."""
    end = time.process_time() + cpu_s
    while time.process_time() < end:
        pass
    time.sleep(sleep_s)

sc = SparkContext()
shape = sys.argv[1]
if shape == "wide":
    print(sc.parallelize(range(64), 64).map(lambda i: work(3.0, 0.05) or i).count())
elif shape == "join":
    def heavy(i, sleep_s=2.5):
        work(sleep_s, 0.05)
        return (i % 16, i)
    a = sc.parallelize(range(32), 32).map(heavy).reduceByKey(lambda x, y: x + y, 16)
    b = sc.parallelize(range(16), 16).map(heavy)
    def part(rows):
        rows = list(rows)
        work(2.0, 0.05)
        return rows
    joined = a.join(b, 16).mapPartitions(part)
    print(joined.repartition(8).mapPartitions(part).count())
elif shape == "straggler":
    print(sc.parallelize(range(32), 32)
          .map(lambda i: work(30.0 if i == 5 else 2.5, 0.05) or i).count())
elif shape == "iterative":
    total = 0
    for it in range(16):
        work(2.0, 0.1)  # driver work between the stages
        total += sum(sc.parallelize(range(8), 8).map(lambda i: work(1.0, 0.05) or i).collect())
    print(total)
sc.stop()
'''


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def loadavg() -> list[float]:
    return [float(v) for v in Path("/proc/loadavg").read_text().split()[:3]]


def run_one(master: str, script: Path, log_dir: Path, shape: str, executors: int,
            rep: int, out: Path = OUT, executor_memory: str = "512m",
            extra_conf: tuple[str, ...] = ("spark.eventLog.rolling.enabled=false",)) -> dict:
    """spark-submit one app; returns its manifest entry (the log, a file or a rolling log
    directory, is moved into `out` as `<shape>-x<N>-r<rep>[.zstd]`)."""
    from cobell_cli.run.local_cluster import find_spark_home

    for old in log_dir.iterdir():
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    name = f"whatif-{shape}-x{executors}-r{rep}"
    conf = [f"spark.eventLog.dir=file://{log_dir}", "spark.eventLog.enabled=true",
            "spark.eventLog.compress=true", "spark.ui.enabled=false", *extra_conf]
    argv = [str(find_spark_home() / "bin" / "spark-submit"), "--master", master,
            "--name", name, "--total-executor-cores", str(executors),
            "--executor-cores", "1", "--executor-memory", executor_memory,
            "--driver-memory", "512m",
            *[a for c in conf for a in ("--conf", c)], str(script), shape]  # fmt: skip
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    env.pop("SPARK_CONF_DIR", None)
    from bench.quiet import quiet_run

    with quiet_run():  # a quiet machine (bench/quiet.py): its load is written below
        before, started = loadavg(), time.time()
        code = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, check=False).returncode
        wall = time.time() - started
    logs = [p for p in log_dir.iterdir() if not p.name.endswith(".crc")]
    if code != 0 or len(logs) != 1:
        raise SystemExit(f"{name}: spark-submit exited {code}, logs {logs}")
    stem = f"{shape}-x{executors}-r{rep}"
    target = out / (stem if logs[0].is_dir() else f"{stem}.zstd")
    shutil.move(str(logs[0]), target)
    for crc in target.glob(".*.crc") if target.is_dir() else ():
        crc.unlink()
    return {"log": target.name, "shape": shape, "executors": executors, "rep": rep,
            "started_at": round(started), "loadavg_before": before,
            "loadavg_after": loadavg(), "wall_s": round(wall, 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executors", type=int, nargs="+", default=list(EXECUTORS))
    parser.add_argument("--reps", type=int, nargs="+", default=list(REPS))
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--keep", action="store_true",
                        help="keep the logs already in bench/data/whatif and record only the "
                             "missing ones")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if OUT.exists() and not args.keep:
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True, exist_ok=True)
    manifest_path = OUT / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else []
    done = {(m["shape"], m["executors"], m["rep"]) for m in manifest}
    order = [(s, x, r) for r in args.reps for x in args.executors for s in args.shapes
             if (s, x, r) not in done]
    random.Random(args.seed).shuffle(order)
    record(order, OUT, APP, memory_per_worker="3g")
    total = sum(p.stat().st_size for p in OUT.iterdir())
    print(f"{len(order)} logs recorded in {OUT} ({total / 1e6:.2f} MB in all)")
    return 0


def record(order: list[tuple[str, int, int]], out: Path, app: str, *, memory_per_worker: str,
           minutes: float | None = None, **run: Any) -> int:
    """Run each (shape, executors, rep) of `order` as `app` on a fresh local cluster (2
    workers x 4 cores on free loopback ports), adding each log's entry to out/manifest.json
    as soon as it is there; start no new run after `minutes`. Returns the runs recorded."""
    from cobell_cli.run.local_cluster import LocalCluster

    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else []
    began, recorded = time.time(), 0
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "app.py"
        script.write_text(app)
        log_dir = Path(tmp) / "events"
        log_dir.mkdir()
        cluster = LocalCluster(Path(tmp) / "cluster")
        cluster.start(workers=2, cores_per_worker=4, memory_per_worker=memory_per_worker,
                      port=free_port(), webui_port=free_port(), timeout_s=180)  # fmt: skip
        try:
            for i, (shape, x, rep) in enumerate(order, 1):
                if minutes is not None and time.time() - began > 60 * minutes:
                    print(f"stopping after {minutes} min: {len(order) - i + 1} runs left")
                    break
                entry = run_one(cluster.master_url, script, log_dir, shape, x, rep, out, **run)
                manifest = [m for m in manifest if m["log"] != entry["log"]] + [entry]
                manifest_path.write_text(json.dumps(sorted(manifest, key=lambda m: m["log"]),
                                                    indent=1) + "\n")
                recorded += 1
                print(f"[{i}/{len(order)}] {entry['log']} {entry['wall_s']:.1f} s, "
                      f"load {entry['loadavg_before'][0]:.2f}", flush=True)
        finally:
            cluster.stop()
    return recorded


if __name__ == "__main__":
    raise SystemExit(main())

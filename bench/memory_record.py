"""Record real Spark runs and each case's memory **need** for the memory benchmark.

    flock /work/.heavy.lock .venv/bin/python -m bench.memory_record --set tune \\
        [--jobs broadcast collect ...] [--executors 1 3] [--budget-min 28]

Starts `cobell local-cluster`'s code on free loopback ports (2 workers x 2 cores; workers
offer WORKER_MEMORY each, so that every executor count and probe fits: a standalone worker's
memory is fixed when it starts), runs PySpark jobs whose executor memory behaves differently
as their input grows, and stops the cluster. Each job is recorded at five input sizes (the
largest 1.5x the next) and each executor count given:

* a **profile run** at PROFILE_MEMORY (the "user's default" reservation) with event logging
  and stage executor metrics on: its peaks are what cobell's history would hold;
* from the third size on, the case's **need**: the smallest executor memory, in 64 MB steps,
  at which the run succeeds, found by probing (a guess from the previous size's need, then
  galloping and bisection). A probe fails when the job fails (an executor's
  OutOfMemoryError ends it: `spark.task.maxFailures=1`) or runs more than PROBE_SLOWDOWN times
  the profile run's time (GC thrash at the edge counts as not enough memory).

Every run lands in bench/data/memory/<set>/runs.jsonl (job, input, executors, memory, purpose,
outcome, wall time, load, and the peaks the event log reports per executor) and the needs in
needs.json; the script resumes where a chunk stopped (`--budget-min` ends a chunk cleanly), so
long recordings split into chunks under the machine-wide lock. Event logs are not kept (the
peaks are what the benchmark reads; the fold is cobell's own, sources/eventlog_profile.py).

Input sizes are the bytes of the rows the job generates (`rows x ROW_BYTES[job]`): the data is
generated inside the job (spark.range), so no input files are needed and a run takes seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "memory"
STEP_MB = 64
FLOOR_MB = 512  # Spark refuses an executor below 1.5 x 300 MB reserved (450 MiB)
PROFILE_MEMORY_MB = 2048
CEILING_MB = 3072  # no probe above: a need beyond is recorded as "> 3072"
WORKER_MEMORY = "9g"
PROBE_SLOWDOWN = 4.0
CASE_RESERVE_S = 240.0  # no case starts this close to the end of the budget
SIZES = 5
GROWTH = 1.5

APP = r'''
import sys
from pyspark import StorageLevel
from pyspark.sql import SparkSession, functions as F

job, rows, x = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
spark = SparkSession.builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")


def payload(col, chars):
    return F.expr(f"repeat(lpad(cast({col} as string), 8, '0'), {chars // 8})")


if job == "broadcast":  # a broadcast join: every executor holds the whole small side
    big = spark.range(0, 200000, 1, x).withColumn("k", F.col("id") * 7 % rows)
    small = spark.range(0, rows, 1, 2).withColumn("payload", payload("id", 96))
    small = small.withColumnRenamed("id", "k")
    out = big.join(F.broadcast(small), "k").agg(F.sum(F.length("payload")))
elif job == "collect":  # one list per executor's partition: memory follows input / executors
    df = spark.range(0, rows, 1, x).withColumn("payload", payload("id", 96)).repartition(x)
    out = df.groupBy(F.spark_partition_id().alias("p")).agg(F.collect_list("payload").alias("l"))
    out = out.select(F.sum(F.size("l")))
elif job == "distinct":  # a set of values from a bounded domain: memory saturates
    df = spark.range(0, rows, 1, x).withColumn("v", (F.rand(1) * 1000000).cast("long"))
    df = df.withColumn("payload", payload("v", 96)).repartition(x)
    out = df.groupBy(F.spark_partition_id().alias("p")).agg(F.collect_set("payload").alias("s"))
    out = out.select(F.sum(F.size("s")))
elif job == "cache":  # a cached dataset read three times: storage evicts, the need stays low
    df = spark.range(0, rows, 1, 2 * x).withColumn("payload", payload("id", 96))
    df = df.persist(StorageLevel.MEMORY_ONLY)
    out = spark.createDataFrame([(sum(df.filter(F.col("id") % 7 == i).count()
                                      for i in range(3)),)], ["n"])
elif job == "sort":  # a wide sort: it spills to disk rather than fail
    df = spark.range(0, rows, 1, 2 * x).withColumn("payload", payload("id", 96))
    out = df.orderBy(F.col("payload").desc(), "id").select(F.sum(F.crc32("payload")))
elif job == "zipf":  # big values per distinct key of a heavy-tailed draw: sqrt-like growth
    keys = spark.range(0, rows, 1, x).select(
        (F.lit(1.0) / (F.rand(2) + F.lit(1e-9))).cast("long").alias("v")).distinct()
    big = keys.withColumn("payload", payload("v", 262144)).repartition(x)
    out = big.groupBy(F.spark_partition_id().alias("p")).agg(F.collect_list("payload").alias("l"))
    out = out.select(F.sum(F.size("l")))
else:
    raise SystemExit(f"unknown job {job}")
print("RESULT", out.collect())
spark.stop()
'''

# Rows at the smallest size, and the bytes each row stands for (its payload and key): the
# input size of a run is rows x ROW_BYTES. Sizes then grow by GROWTH.
JOBS: dict[str, tuple[int, int]] = {
    "broadcast": (400_000, 104),
    "collect": (300_000, 104),
    "distinct": (800_000, 104),
    "cache": (800_000, 104),
    "sort": (800_000, 104),
    "zipf": (300_000, 8),
}


def sizes(job: str) -> list[int]:
    base = JOBS[job][0]
    return [int(round(base * GROWTH**k, -3)) for k in range(SIZES)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


class Recorder:
    """The cluster, the app script, and the files runs and needs are appended to."""

    def __init__(self, out: Path, tmp: Path, master: str) -> None:
        self.out, self.tmp, self.master = out, tmp, master
        self.script = tmp / "app.py"
        self.script.write_text(APP)
        self.lock = threading.Lock()  # runs.jsonl and needs.json, written by several threads
        self.runs_path = out / "runs.jsonl"
        self.needs_path = out / "needs.json"
        self.needs: dict[str, dict] = (
            json.loads(self.needs_path.read_text()) if self.needs_path.exists() else {}
        )

    def events(self) -> Path:
        """This thread's own event-log directory, emptied."""
        path = self.tmp / f"events-{threading.get_ident()}"
        path.mkdir(exist_ok=True)
        for old in path.iterdir():
            shutil.rmtree(old) if old.is_dir() else old.unlink()
        return path

    def run(self, job: str, rows: int, x: int, memory_mb: int, purpose: str,
            timeout_s: float) -> dict:
        """One spark-submit; returns its record (also appended to runs.jsonl)."""
        from cobell_cli.core.memory.failures import memory_failure
        from cobell_cli.run.local_cluster import find_spark_home

        events = self.events()
        argv = [str(find_spark_home() / "bin" / "spark-submit"), "--master", self.master,
                "--name", f"mem-{job}-{rows}-x{x}-{memory_mb}", "--total-executor-cores", str(x),
                "--executor-cores", "1", "--executor-memory", f"{memory_mb}m",
                "--driver-memory", "2g",
                "--conf", "spark.task.maxFailures=1",
                "--conf", "spark.ui.enabled=false",
                "--conf", "spark.eventLog.enabled=true",
                "--conf", f"spark.eventLog.dir={events.as_uri()}",
                "--conf", "spark.eventLog.logStageExecutorMetrics=true",
                "--conf", "spark.executor.processTreeMetrics.enabled=true",
                str(self.script), job, str(rows), str(x)]  # fmt: skip
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        env.pop("SPARK_CONF_DIR", None)
        load, started = loadavg(), time.time()
        try:
            proc = subprocess.run(argv, env=env, capture_output=True, text=True,
                                  timeout=timeout_s, check=False)
            code, output = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            code, output = None, str(exc.stderr or "")
        wall = time.time() - started
        if code == 0 and "RESULT" in output:
            outcome = "succeeded"
        elif code is None:
            outcome = "timeout"
        elif any(memory_failure(line) for line in output.splitlines()):
            outcome = "memory"
        else:
            outcome = "error"
        record = {
            "job": job, "rows": rows, "input_bytes": rows * JOBS[job][1], "scale_out": x,
            "executor_memory_mb": memory_mb, "purpose": purpose, "outcome": outcome,
            "wall_s": round(wall, 2), "loadavg": load, "at": round(started, 1),
            **self._peaks(events),
        }  # fmt: skip
        if outcome == "error":
            record["error"] = output.strip().splitlines()[-3:]
        with self.lock, self.runs_path.open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        print(f"  {purpose:7s} {job} rows={rows} x={x} mem={memory_mb} -> {outcome} "
              f"{wall:.0f}s load {load:.1f}", flush=True)
        return record

    def _peaks(self, events: Path) -> dict:
        """The run's executor memory as cobell's fold reads it (None without a log)."""
        from dataclasses import asdict

        from cobell_cli.sources.eventlog_profile import summarize

        logs = [p for p in events.iterdir() if not p.name.endswith(".crc")]
        if len(logs) != 1:
            return {"executors": None}
        try:
            memory = summarize(logs[0]).memory
        except Exception as exc:  # a torn log of a killed probe
            return {"executors": None, "log_error": str(exc)[:100]}
        assert memory is not None
        return {
            "executors": [asdict(e) for e in memory.executors],
            "task_run_s": memory.task_run_s, "task_gc_s": memory.task_gc_s,
            "shuffle_write_bytes": memory.shuffle_write_bytes, "tasks": memory.tasks,
            "memory_failures": memory.memory_failures[:2],
        }  # fmt: skip

    def save_need(self, key: str, need: dict) -> None:
        with self.lock:
            self.needs[key] = need
            self.needs_path.write_text(json.dumps(self.needs, indent=1, sort_keys=True) + "\n")


def case_key(job: str, rows: int, x: int) -> str:
    return f"{job}/{rows}/x{x}"


def find_need(rec: Recorder, job: str, rows: int, x: int, guess: int, timeout_s: float,
              known_ok: int | None) -> dict:
    """The smallest memory (STEP_MB steps, >= FLOOR_MB) at which the case succeeds: probe
    the guess, walk away from it in doubling steps until the outcome flips, then bisect."""
    ok, fail = known_ok, None  # smallest success, largest failure seen
    probes, step = 0, STEP_MB
    probe = max(FLOOR_MB, min(_steps(guess), CEILING_MB))
    if ok is not None and probe >= ok:
        probe = max(FLOOR_MB, ok - STEP_MB)
    while not _settled(ok, fail):
        result = rec.run(job, rows, x, probe, "probe", timeout_s)
        probes += 1
        if result["outcome"] == "error":
            return {"need_mb": None, "error": result.get("error"), "probes": probes}
        if result["outcome"] == "succeeded":
            ok = probe if ok is None else min(ok, probe)
        else:
            fail = probe if fail is None else max(fail, probe)
        if ok is not None and fail is not None:
            probe = fail + max(STEP_MB, _steps((ok - fail) // 2))
        elif ok is not None:
            probe, step = max(FLOOR_MB, ok - step), step * 2
        else:
            assert fail is not None
            probe, step = min(CEILING_MB, fail + step), step * 2
    settled = ok is not None and (ok == FLOOR_MB or (fail is not None and ok - fail <= STEP_MB))
    return {"need_mb": ok if settled else None, "above_mb": fail, "probes": probes}


def _steps(mb: float) -> int:
    return round(mb / STEP_MB) * STEP_MB


def _settled(ok: int | None, fail: int | None) -> bool:
    if ok is not None and (ok == FLOOR_MB or (fail is not None and ok - fail <= STEP_MB)):
        return True
    return fail is not None and fail >= CEILING_MB


def _guess(previous: tuple[int, int] | None, rows: int, job: str) -> int:
    """Where the search starts: the previous size's need above Spark's smallest grown with
    the input (a need at the smallest stays there), else Spark's smallest."""
    if previous is None:  # many cases need no more than Spark's smallest executor
        return FLOOR_MB
    prev_rows, need = previous
    return _steps(FLOOR_MB + (need - FLOOR_MB) * rows / prev_rows)


def record(rec: Recorder, jobs: list[str], executors: list[int], deadline: float,
           parallel: int = 1) -> bool:
    """Every (job, x), sizes in order, `parallel` of them at a time (a need does not depend on
    how long a run takes, and the apps wait on their JVMs half the time); False when the
    budget ran out first."""
    pairs = queue.SimpleQueue()
    for job in jobs:
        for x in executors:
            pairs.put((job, x))
    finished = []

    def work() -> None:
        while True:
            try:
                job, x = pairs.get_nowait()
            except queue.Empty:
                return
            try:
                finished.append(record_pair(rec, job, x, deadline))
            except Exception as exc:  # one pair's trouble must not end the others
                print(f"{job} x{x}: {type(exc).__name__}: {exc}", flush=True)
                finished.append(False)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(parallel)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return all(finished)


def record_pair(rec: Recorder, job: str, x: int, deadline: float) -> bool:
    """One (job, x): its sizes in order; False when the budget ran out first."""
    previous: tuple[int, int] | None = None  # (rows, need)
    for k, rows in enumerate(sizes(job)):
        key = case_key(job, rows, x)
        done = rec.needs.get(key)
        if done is not None and done.get("complete"):
            if done.get("need_mb"):
                previous = (rows, done["need_mb"])
            continue
        if time.time() > deadline - CASE_RESERVE_S:  # a case started now ends within budget
            return False
        print(f"{key} (load {loadavg():.1f})", flush=True)
        profile = rec.run(job, rows, x, PROFILE_MEMORY_MB, "profile", timeout_s=600)
        entry: dict = {"job": job, "rows": rows, "scale_out": x,
                       "input_bytes": rows * JOBS[job][1],
                       "profile_outcome": profile["outcome"]}
        if k >= 2:
            ok = PROFILE_MEMORY_MB if profile["outcome"] == "succeeded" else None
            guess = _guess(previous, rows, job)
            timeout = PROBE_SLOWDOWN * profile["wall_s"] + 60
            entry.update(find_need(rec, job, rows, x, guess, timeout, ok))
            if entry.get("need_mb"):
                previous = (rows, entry["need_mb"])
        entry["complete"] = True
        rec.save_need(key, entry)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", required=True, help="tune (constants fitted) or test (fresh)")
    parser.add_argument("--jobs", nargs="+", choices=sorted(JOBS), default=sorted(JOBS))
    parser.add_argument("--executors", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--parallel", type=int, default=2,
                        help="(job, executors) pairs recorded at the same time")
    parser.add_argument("--budget-min", type=float, default=28.0,
                        help="stop starting cases after this long (a chunk under the lock)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from cobell_cli.run.local_cluster import LocalCluster

    def stop(signum: int, _frame: object) -> None:  # a timeout's SIGTERM: stop the cluster
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)

    deadline = time.time() + 60 * args.budget_min
    out = DATA / args.set
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cluster = LocalCluster(Path(tmp) / "cluster")
        cluster.start(workers=2, cores_per_worker=4, memory_per_worker=WORKER_MEMORY,
                      port=free_port(), webui_port=free_port(), timeout_s=300)
        try:
            rec = Recorder(out, Path(tmp), cluster.master_url)
            finished = record(rec, args.jobs, args.executors, deadline, args.parallel)
        finally:
            cluster.stop()
    print("all cases recorded" if finished else "budget used: run again to continue")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

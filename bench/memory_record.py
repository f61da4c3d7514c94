"""Record real Spark runs and each case's memory **need** for the memory benchmark.

    flock /work/.heavy.lock .venv/bin/python -m bench.memory_record --set tune \\
        [--jobs broadcast collect ...] [--executors 1 3] [--budget-min 26] [--parallel 2]

Starts `cobell local-cluster`'s code on free loopback ports (2 workers; they offer
WORKER_MEMORY each, so that every executor count and probe fits: a standalone worker's memory
is fixed when it starts), runs PySpark jobs whose executor memory behaves differently as their
input grows, and stops the cluster. A case is (job, input size, executor count); each job is
recorded at five input sizes (the largest 1.5x the next) and each executor count given.

An application costs a minute or more of JVM start-up on this crowded 2-core machine, far
more than the small jobs it runs, so one application runs a job at **several sizes**, one
after the other (each size a Spark job group; the event log's per-job executor peaks tell the
sizes' peaks apart, sources/eventlog_profile.py), smallest first, and stops at the first that
fails (a larger input needs at least as much):

* a **profile application** at PROFILE_MEMORY_MB (the "user's default" reservation), all five
  sizes, event logging with stage executor metrics polled every 250 ms: each size's heap peak
  is what cobell's history would hold (the per-size "runs" of the benchmark);
* from the third size on, each case's **need**: the smallest executor memory, in 64 MB steps,
  at which the size succeeds, found by **search applications** at memory M running the sizes
  whose need is still open: one application answers for all of them (those before its first
  failure need at most M, the rest more); the next M halves the widest open interval
  (it starts at the profile's heap peak, which bounds the need from below). A size fails when
  its job fails (an executor's OutOfMemoryError ends it: `spark.task.maxFailures=1`) or
  takes more than PROBE_SLOWDOWN times the profile's time for it (GC thrash at the edge counts
  as not enough memory).

Everything lands in bench/data/memory/<set>/: runs.jsonl (one line per size of every
application: job, input, executors, memory, purpose, outcome, seconds, load, the size's heap
peak and the application's executor metrics) and needs.json; the script resumes where a chunk
stopped (`--budget-min`), so long recordings split into chunks under the machine-wide lock.

Input sizes are the bytes of the rows the job generates (`rows x ROW_BYTES[job]`): the data is
generated inside the job (spark.range), so no input files are needed.
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
from dataclasses import dataclass
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
# The JVMs compile with C1 only: a short application's CPU goes mostly to start-up and JIT,
# and the machine is shared; what lives on the heap (the need) does not depend on the JIT.
JIT = "-XX:TieredStopAtLevel=1"
# The jobs whose need grows first (what the benchmark is about), then the cheap ones (a need at
# Spark's smallest executor costs one search application).
ORDER = ("collect", "broadcast", "sort", "cache", "distinct", "zipf")

APP = r'''
import sys, time
from pyspark import StorageLevel
from pyspark.sql import SparkSession, functions as F

job, x, chars = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sizes = [int(v) for v in sys.argv[4:]]
spark = SparkSession.builder.getOrCreate()
sc = spark.sparkContext
sc.setLogLevel("ERROR")


def payload(col, chars):
    return F.expr(f"repeat(lpad(cast({col} as string), 8, '0'), {chars // 8})")


def per_partition(df, agg):
    return df.groupBy(F.spark_partition_id().alias("p")).agg(agg.alias("l"))


def run(rows):
    if job == "broadcast":  # a broadcast join: every executor holds the whole small side
        big = spark.range(0, 200000, 1, x).withColumn("k", F.col("id") * 7 % rows)
        small = spark.range(0, rows, 1, 2).withColumn("payload", payload("id", chars))
        small = small.withColumnRenamed("id", "k")
        return big.join(F.broadcast(small), "k").agg(F.sum(F.length("payload"))).collect()
    if job == "collect":  # one list per executor's partition: memory follows input/executors
        df = spark.range(0, rows, 1, x).withColumn("payload", payload("id", chars)).repartition(x)
        out = per_partition(df, F.collect_list("payload"))
        return out.select(F.sum(F.size("l"))).collect()
    if job == "distinct":  # a set of values from a bounded domain: memory saturates
        df = spark.range(0, rows, 1, x).withColumn("v", (F.rand(1) * 3000000).cast("long"))
        df = df.withColumn("payload", payload("v", chars)).repartition(x)
        out = per_partition(df, F.collect_set("payload"))
        return out.select(F.sum(F.size("l"))).collect()
    if job == "cache":  # a cached dataset read three times: storage evicts, the need stays low
        df = spark.range(0, rows, 1, 2 * x).withColumn("payload", payload("id", chars))
        df = df.persist(StorageLevel.MEMORY_ONLY)
        try:
            return [df.filter(F.col("id") % 7 == i).count() for i in range(3)]
        finally:
            df.unpersist(blocking=True)
    if job == "sort":  # a wide sort: it spills to disk rather than fail
        df = spark.range(0, rows, 1, 2 * x).withColumn("payload", payload("id", chars))
        out = df.orderBy(F.col("payload").desc(), "id")
        return out.select(F.sum(F.crc32("payload"))).collect()
    if job == "zipf":  # big values per distinct key of a heavy-tailed draw: sqrt-like growth
        keys = spark.range(0, rows, 1, x).select(
            (F.lit(1.0) / (F.rand(2) + F.lit(1e-9))).cast("long").alias("v")).distinct()
        big = keys.withColumn("payload", payload("v", chars)).repartition(x)
        out = per_partition(big, F.collect_list("payload"))
        return out.select(F.sum(F.size("l"))).collect()
    raise SystemExit(f"unknown job {job}")


for rows in sizes:  # smallest first; the first failure ends it (more input needs more)
    group = f"rows-{rows}"
    sc.setJobGroup(group, group)
    started = time.time()
    try:
        run(rows)
    except Exception as exc:
        text = str(exc).replace(chr(10), " ")[:400]
        jobs = ",".join(map(str, sc.statusTracker().getJobIdsForGroup(group)))
        print(f"CASE {rows} failed {time.time() - started:.1f} {jobs or '-'} {text}", flush=True)
        break
    jobs = ",".join(map(str, sc.statusTracker().getJobIdsForGroup(group)))
    print(f"CASE {rows} succeeded {time.time() - started:.1f} {jobs or '-'}", flush=True)
spark.stop()
'''

# Per set, per job: rows at the smallest size, the bytes each row stands for (its payload
# and key: the input size of a run is rows x row bytes), and the payload characters per value.
# Sizes then grow by GROWTH. The test set's jobs have other parameters (wider values, other
# row counts) than the tune set's, on which every constant of the memory model was chosen.
JOBS: dict[str, dict[str, tuple[int, int, int]]] = {
    "tune": {
        "broadcast": (500_000, 104, 96),
        "collect": (1_000_000, 104, 96),
        "distinct": (1_500_000, 104, 96),
        "cache": (1_000_000, 104, 96),
        "sort": (1_000_000, 104, 96),
        "zipf": (300_000, 8, 131072),
    },
    "test": {
        "broadcast": (300_000, 168, 160),
        "collect": (600_000, 168, 160),
        "distinct": (1_000_000, 168, 160),
        "cache": (600_000, 168, 160),
        "sort": (600_000, 168, 160),
        "zipf": (400_000, 8, 98304),
    },
}


def params(set_name: str) -> dict[str, tuple[int, int, int]]:
    """A set's job parameters (a set of another name records with the tune set's)."""
    return JOBS.get(set_name, JOBS["tune"])


def sizes(job: str, set_name: str = "tune") -> list[int]:
    base = params(set_name)[job][0]
    return [int(round(base * GROWTH**k, -3)) for k in range(SIZES)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


class Recorder:
    """The cluster, the app script, and the files runs and needs are appended to."""

    def __init__(self, out: Path, tmp: Path, master: str, set_name: str = "tune") -> None:
        self.out, self.tmp, self.master, self.set_name = out, tmp, master, set_name
        self.jobs = params(set_name)
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

    def run(self, job: str, x: int, rows: list[int], memory_mb: int, purpose: str,
            timeout_s: float) -> dict[int, dict]:
        """One application at `memory_mb` running the sizes in order (the first failure ends
        it); a record per size it reached (appended to runs.jsonl), by rows."""
        from cobell_cli.core.memory.failures import memory_failure
        from cobell_cli.run.local_cluster import find_spark_home

        events = self.events()
        argv = [str(find_spark_home() / "bin" / "spark-submit"), "--master", self.master,
                "--name", f"mem-{job}-x{x}-{memory_mb}", "--total-executor-cores", str(x),
                "--executor-cores", "1", "--executor-memory", f"{memory_mb}m",
                "--driver-memory", "2g",
                "--conf", "spark.task.maxFailures=1",
                "--conf", "spark.ui.enabled=false",
                "--conf", "spark.eventLog.enabled=true",
                "--conf", f"spark.eventLog.dir={events.as_uri()}",
                "--conf", "spark.eventLog.logStageExecutorMetrics=true",
                "--conf", "spark.executor.metrics.pollingInterval=250ms",
                "--conf", "spark.executor.processTreeMetrics.enabled=true",
                "--conf", f"spark.driver.extraJavaOptions={JIT}",
                "--conf", f"spark.executor.extraJavaOptions={JIT}",
                str(self.script), job, str(x), str(self.jobs[job][2]), *map(str, rows)]  # fmt: skip
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        env.pop("SPARK_CONF_DIR", None)
        load, started = loadavg(), time.time()
        try:
            proc = subprocess.run(argv, env=env, capture_output=True, text=True,
                                  timeout=timeout_s, check=False)
            code, output = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            code, output = None, _text(exc.stdout) + _text(exc.stderr)
        wall = time.time() - started
        app = self._peaks(events)
        cases = _cases(output)
        out: dict[int, dict] = {}
        for size in rows:
            case = cases.get(size)
            if case is None:
                if code is None and (not out or all(r["outcome"] == "succeeded"
                                                    for r in out.values())):
                    outcome = "timeout"  # the size running when time ran out
                elif out and any(r["outcome"] != "succeeded" for r in out.values()):
                    break  # after the first failure: not run
                elif any(memory_failure(line) for line in output.splitlines()):
                    outcome = "memory"
                else:
                    outcome = "error"
                seconds, jobs, why = None, [], output.strip().splitlines()[-3:]
            else:
                outcome, seconds, jobs, why = case
                if outcome == "failed":
                    outcome = "memory" if memory_failure(why or output) else "error"
            record = {
                "job": job, "rows": size, "input_bytes": size * self.jobs[job][1], "scale_out": x,
                "executor_memory_mb": memory_mb, "purpose": purpose, "outcome": outcome,
                "seconds": seconds, "app_wall_s": round(wall, 2), "loadavg": load,
                "at": round(started, 1),
                "heap_mb": max((app["job_heap_mb"].get(str(j), 0.0) for j in jobs), default=None)
                if app.get("job_heap_mb") else None,
                **({"why": why} if outcome not in ("succeeded",) else {}),
                **app,
            }  # fmt: skip
            out[size] = record
            with self.lock, self.runs_path.open("a") as fh:
                fh.write(json.dumps(record) + "\n")
            print(f"  {purpose:7s} {job} x={x} mem={memory_mb} rows={size} -> {outcome} "
                  f"({seconds or 0:.0f} s of an app of {wall:.0f} s, load {load:.1f})",
                  flush=True)
            if outcome != "succeeded":
                break
        return out

    def _peaks(self, events: Path) -> dict:
        """The application's executor memory as cobell's fold reads it (None without a log)."""
        from dataclasses import asdict

        from cobell_cli.sources.eventlog_profile import summarize

        logs = [p for p in events.iterdir() if not p.name.endswith(".crc")]
        if len(logs) != 1:
            return {"executors": None}
        try:
            memory = summarize(logs[0]).memory
        except Exception as exc:  # a torn log of a killed application
            return {"executors": None, "log_error": str(exc)[:100]}
        assert memory is not None
        return {
            "executors": [asdict(e) for e in memory.executors],
            "task_run_s": memory.task_run_s, "task_gc_s": memory.task_gc_s,
            "shuffle_write_bytes": memory.shuffle_write_bytes, "tasks": memory.tasks,
            "memory_failures": memory.memory_failures[:2], "job_heap_mb": memory.job_heap_mb,
        }  # fmt: skip

    def earlier(self, job: str, x: int) -> tuple[dict[int, dict], list[dict]]:
        """What runs.jsonl already holds for (job, x): the last profile application's records
        by rows, and every search record (a chunk cut short resumes from them)."""
        if not self.runs_path.exists():
            return {}, []
        mine = [r for r in map(json.loads, self.runs_path.read_text().splitlines())
                if r["job"] == job and r["scale_out"] == x]
        profiles = [r for r in mine if r["purpose"] == "profile"]
        last = max((r["at"] for r in profiles), default=None)
        profile = {r["rows"]: r for r in profiles if r["at"] == last}
        return profile, [r for r in mine if r["purpose"] == "search"]

    def save_need(self, key: str, need: dict) -> None:
        with self.lock:
            self.needs[key] = need
            self.needs_path.write_text(json.dumps(self.needs, indent=1, sort_keys=True) + "\n")


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value or ""  # type: ignore[return-value]


def _cases(output: str) -> dict[int, tuple[str, float, list[int], str]]:
    """The application's `CASE rows outcome seconds jobs [why]` lines, by rows."""
    out = {}
    for line in output.splitlines():
        parts = line.split(" ", 5)
        if len(parts) >= 5 and parts[0] == "CASE" and parts[1].isdigit():
            jobs = [int(j) for j in parts[4].split(",") if j.isdigit()]
            out[int(parts[1])] = (parts[2], float(parts[3]), jobs, parts[5] if len(parts) > 5
                                  else "")
    return out


def case_key(job: str, rows: int, x: int) -> str:
    return f"{job}/{rows}/x{x}"


def _steps(mb: float) -> int:
    return round(mb / STEP_MB) * STEP_MB


@dataclass
class Open:
    """What the applications so far say of one case's need: above `fail`, at most `ok`."""

    ok: int | None
    fail: int = FLOOR_MB - STEP_MB

    @property
    def settled(self) -> bool:
        if self.ok is not None and (self.ok == FLOOR_MB or self.ok - self.fail <= STEP_MB):
            return True
        return self.fail >= CEILING_MB

    @property
    def width(self) -> float:
        return (self.ok if self.ok is not None else 2 * CEILING_MB) - self.fail


def next_memory(cases: dict[int, Open]) -> int:
    """Halve the widest open interval (or, above the profile's memory, gallop up)."""
    widest = max((c for c in cases.values() if not c.settled), key=lambda c: c.width)
    if widest.ok is None:
        return min(CEILING_MB, max(widest.fail + STEP_MB, 2 * widest.fail))
    return widest.fail + max(STEP_MB, _steps((widest.ok - widest.fail) / 2))


def search(rec: Recorder, job: str, x: int, cases: dict[int, Open], timeout_s: float,
           deadline: float, first_mb: int = FLOOR_MB) -> int:
    """Search applications until every case's need is settled (or the budget ends); each
    runs the open sizes in order, and a larger input is taken to need at least as much.
    The first runs at `first_mb` (Spark's smallest executor: many cases need no more)."""
    apps = 0
    while any(not c.settled for c in cases.values()) and time.time() < deadline:
        memory = first_mb if apps == 0 else next_memory(cases)
        todo = sorted(r for r, c in cases.items() if not (c.ok is not None and c.ok <= memory))
        todo = [r for r in todo if not cases[r].fail >= memory]
        got = rec.run(job, x, todo, memory, "search", timeout_s)
        apps += 1
        if not got:  # the application did not start a size: the search cannot go on
            break
        for rows in sorted(cases):
            record = got.get(rows)
            if record is not None and record["outcome"] == "succeeded":
                for smaller in (r for r in cases if r <= rows):  # less input: no more need
                    c = cases[smaller]
                    c.ok = memory if c.ok is None else min(c.ok, memory)
            elif record is not None or (rows > min(got) and rows in todo):
                if record is not None and record["outcome"] == "error":
                    return apps
                for larger in (r for r in cases if r >= rows):  # more input: no less need
                    cases[larger].fail = max(cases[larger].fail, memory)
                break
    return apps


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
    """One (job, x): a profile application of all sizes, then the search for the needs of the
    sizes from the third on. False when the budget ran out first (it resumes later)."""
    all_sizes = sizes(job, rec.set_name)
    keys = {rows: case_key(job, rows, x) for rows in all_sizes}
    if all(rec.needs.get(k, {}).get("complete") for k in keys.values()):
        return True
    if time.time() > deadline - CASE_RESERVE_S:
        return False
    print(f"{job} x{x} (load {loadavg():.1f})", flush=True)
    profile, searched = rec.earlier(job, x)
    if not profile:
        profile = rec.run(job, x, all_sizes, PROFILE_MEMORY_MB, "profile", timeout_s=1800)
    seconds = sum(r["seconds"] or 0 for r in profile.values())
    cases = bounds(profile, searched, all_sizes)
    if any(r["outcome"] == "error" for r in profile.values()):
        return True  # recorded as it is; the job needs fixing, not more applications
    # the smallest open size's heap peak at the profile's memory: where its need starts to
    # be plausible (a need at the floor shows a small peak)
    peaks = [profile[r].get("heap_mb") for r in cases if r in profile]
    first = max(FLOOR_MB, min(CEILING_MB, _steps(min(peaks)))) if all(peaks) and peaks \
        else FLOOR_MB
    if searched and not all(c.settled for c in cases.values()):
        first = next_memory(cases)  # resumed: go on where the last chunk stopped
    apps = len({r["at"] for r in searched})
    if time.time() < deadline:
        apps += search(rec, job, x, cases, PROBE_SLOWDOWN * seconds + 180, deadline, first)
    save_needs(rec, job, x, all_sizes, profile, cases, apps)
    return all(c.settled for c in cases.values())


def bounds(profile: dict[int, dict], searched: list[dict], all_sizes: list[int]
           ) -> dict[int, Open]:
    """The open cases (the third size on) as the profile and earlier search records bound
    them: a size that succeeded at M needs at most M (and so does every smaller one), one that
    failed for memory or time at M needs more (and so does every larger one). The profile's
    records count as search records at PROFILE_MEMORY_MB."""
    cases = {rows: Open(PROFILE_MEMORY_MB if profile.get(rows, {}).get("outcome")
                        == "succeeded" else None)
             for rows in all_sizes[2:]}
    for r in [*profile.values(), *searched]:
        memory = r["executor_memory_mb"]
        if r["outcome"] == "succeeded":
            for c in (c for rows, c in cases.items() if rows <= r["rows"]):
                c.ok = memory if c.ok is None else min(c.ok, memory)
        elif r["outcome"] in ("memory", "timeout"):
            for c in (c for rows, c in cases.items() if rows >= r["rows"]):
                c.fail = max(c.fail, memory)
    return cases


def save_needs(rec: Recorder, job: str, x: int, all_sizes: list[int], profile: dict[int, dict],
               cases: dict[int, Open], apps: int) -> None:
    """needs.json's entries for (job, x): a need where the search settled it, its bounds."""
    for rows in all_sizes:
        entry: dict = {"job": job, "rows": rows, "scale_out": x,
                       "input_bytes": rows * rec.jobs[job][1],
                       "profile_outcome": profile.get(rows, {}).get("outcome")}
        c = cases.get(rows)
        if c is not None:
            entry.update(need_mb=c.ok if c.settled and c.fail < CEILING_MB else None,
                         above_mb=c.fail, at_most_mb=c.ok, search_apps=apps)
        entry["complete"] = c is None or c.settled
        rec.save_need(case_key(job, rows, x), entry)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", required=True, help="tune (constants fitted) or test (fresh)")
    parser.add_argument("--jobs", nargs="+", choices=sorted(JOBS["tune"]), default=list(ORDER))
    parser.add_argument("--executors", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--parallel", type=int, default=2,
                        help="(job, executors) pairs recorded at the same time")
    parser.add_argument("--budget-min", type=float, default=28.0,
                        help="stop starting cases after this long (a chunk under the lock)")
    parser.add_argument("--summarize", action="store_true",
                        help="rebuild needs.json from runs.jsonl (a chunk killed mid-search), "
                        "no cluster")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from cobell_cli.run.local_cluster import LocalCluster

    if args.summarize:
        with tempfile.TemporaryDirectory() as tmp:
            rec = Recorder(DATA / args.set, Path(tmp), "", args.set)
        for job in args.jobs:
            for x in args.executors:
                profile, searched = rec.earlier(job, x)
                if profile:
                    all_sizes = sizes(job, args.set)
                    save_needs(rec, job, x, all_sizes, profile,
                               bounds(profile, searched, all_sizes),
                               len({r["at"] for r in searched}))
        return 0

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
            rec = Recorder(out, Path(tmp), cluster.master_url, args.set)
            finished = record(rec, args.jobs, args.executors, deadline, args.parallel)
        finally:
            cluster.stop()
    print("all cases recorded" if finished else "budget used: run again to continue")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

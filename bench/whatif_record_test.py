"""Record the what-if's fresh test set: real Spark event logs no constant was fitted on.

    COBELL_QUIET_LOCK=/tmp/cobell-quiet.lock .venv/bin/python -m bench.whatif_record_test

Every run waits for a quiet machine (bench/quiet.py: 1-minute load below 1.5, the lock named by
COBELL_QUIET_LOCK held alone); its load is written beside it in the manifest.

Recorded after the what-if's method was frozen (issue 23, item 4), on the same kind of
cluster as bench/whatif_record.py's tuning set (`cobell local-cluster`'s code, 2 workers x 4
cores on loopback, one-core executors on this 2-core machine) but with other job parameters:
other shapes, task counts and lengths, a larger CPU share, more stages, executors of 768m,
rolling event-log directories (zstd) with `spark.eventLog.logStageExecutorMetrics`, and
executors 1, 2, 3, 4, 6, 8 (two repetitions each, in a shuffled order; since 25 Nov 21:40
UTC, a cell's first missing repetition before any cell's second, so that a recording stopped
early leaves a complete one-repetition grid). The committed set was recorded afresh on 29 Nov
(23:42-01:35 UTC, 30 runs: the full one-repetition grid and 6 second repetitions) with the
machine quiet before each run; the earlier set, recorded under load, was discarded.
Logs land in bench/data/whatif-test/ as `<shape>-x<N>-r<rep>` (a rolling `eventlog_v2_*` directory,
renamed), with manifest.json (load averages before and after each run, its start time and
wall time). `--minutes M` stops starting new runs after M minutes (the machine-wide lock is
held for at most ~30 min at a time); rerun to record the rest (the manifest says what is
done).

The shapes (PySpark; a task is a busy loop of the given CPU seconds, then a sleep):

* cpu: one stage of 36 tasks of 0.45 s CPU + 1.0 s sleep: a third of each task computes,
  so 6-8 executors ask more of the 2 cores than they have.
* stages3: three stages in a chain: 30 map tasks (1.5 s sleep + 0.02 s CPU) reduced by key
  into 10 partitions (2.0 s each), reduced again into 5 (1.0 s each).
* skew: one stage of 24 tasks whose sleeps grow from 0.5 s to 3.95 s (0.15 s apart).
* loop: 8 iterations of 1.0 s of driver work (0.3 s CPU), then 12 map tasks of 0.7 s
  reduced into 4 partitions (0.3 s each), collected: 16 stages.
"""

from __future__ import annotations

import argparse
import json
import random
import sys

from bench.whatif_record import ROOT, record

OUT = ROOT / "bench" / "data" / "whatif-test"
SHAPES = ("cpu", "stages3", "skew", "loop")
EXECUTORS = (1, 2, 3, 4, 6, 8)
REPS = (1, 2)
EXECUTOR_MEMORY = "768m"
CONF = ("spark.eventLog.rolling.enabled=true", "spark.eventLog.rolling.maxFileSize=10m",
        "spark.eventLog.logStageExecutorMetrics=true")

APP = '''
import sys, time
from operator import add
from pyspark import SparkContext

def work(sleep_s, cpu_s):
    end = time.process_time() + cpu_s
    while time.process_time() < end:
        pass
    time.sleep(sleep_s)

def slow_partition(sleep_s, cpu_s=0.02):
    def run(rows):
        rows = list(rows)
        work(sleep_s, cpu_s)
        return rows
    return run

sc = SparkContext()
shape = sys.argv[1]
if shape == "cpu":
    print(sc.parallelize(range(36), 36).map(lambda i: work(1.0, 0.45) or i).count())
elif shape == "stages3":
    a = sc.parallelize(range(30), 30).map(lambda i: work(1.5, 0.02) or (i % 10, i))
    b = a.reduceByKey(add, 10).mapPartitions(slow_partition(2.0))
    c = b.map(lambda kv: (kv[0] % 5, kv[1])).reduceByKey(add, 5)
    print(c.mapPartitions(slow_partition(1.0)).count())
elif shape == "skew":
    print(sc.parallelize(range(24), 24).map(lambda i: work(0.5 + 0.15 * i, 0.02) or i).count())
elif shape == "loop":
    total = 0
    for it in range(8):
        work(0.7, 0.3)  # driver work between the iterations
        rdd = sc.parallelize(range(12), 12).map(lambda i: work(0.7, 0.02) or (i % 4, i))
        total += sum(v for _, v in rdd.reduceByKey(add, 4).mapPartitions(
            slow_partition(0.3)).collect())
    print(total)
sc.stop()
'''


def recording_order(done: set[tuple[str, int, int]], seed: int = 23,
                    ) -> list[tuple[str, int, int]]:
    """The (shape, executors, rep) runs not yet recorded, shuffled (seeded) so that a drift
    in the machine's load does not line up with the executor count; a cell's first missing
    repetition before any cell's second, so that a stopped recording leaves a complete
    one-repetition grid (the sort is stable: shuffled within)."""
    order = [(s, x, r) for r in REPS for x in EXECUTORS for s in SHAPES]
    random.Random(seed).shuffle(order)
    order = [o for o in order if o not in done]
    reps_done = {(s, x): sum(1 for d in done if d[:2] == (s, x)) for s, x, _ in order}
    rank = {o: sum(1 for m in order[:i] if m[:2] == o[:2]) for i, o in enumerate(order)}
    return sorted(order, key=lambda o: reps_done[o[:2]] + rank[o])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=25.0,
                        help="start no new run after this many minutes (default 25)")
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    OUT.mkdir(parents=True, exist_ok=True)
    manifest_path = OUT / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else []
    done = {(m["shape"], m["executors"], m["rep"]) for m in manifest}
    order = recording_order(done, args.seed)
    record(order, OUT, APP, memory_per_worker="4g", minutes=args.minutes,
           executor_memory=EXECUTOR_MEMORY, extra_conf=CONF)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

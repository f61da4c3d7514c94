"""A deadline decision's CPU time next to one predict's, as the CLI runs them.

    python -m bench.deadline_cpu [--repeats 7] [--output FILE]

Wall time on two shared cores says little, so each command's CPU time (user + system of the
child process) is measured. The history is bench.deadline's warmed one (seed 7, simulator: six
solo runs per job and ten bursts of five), written to a real history file; the model cache
is warmed by one predict per job (as `cobell submit` leaves it). Measured, each `--repeats`
times, alternating:

* `cobell predict -j sgd -t T --cluster none`: one predict;
* `cobell predict -j sgd --deadline +D --cluster none`: alone, and with 9 other submits with
  deadlines in the history (a burst of ten: the rows `cobell submit --deadline` writes,
  decided in turn by deadlines.decide_and_record, so waiting ones and started ones).

Goal (issue 27): a decision's CPU time within 2x one predict's, also inside a burst of 10.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import ROOT, publish
from bench.colocation import DEFAULT_DATA, World, truth
from bench.deadline import TUNING_SEED, warmed
from bench.deadline_world import JOBS, REF_SCALE_OUT
from bench.latency import child_env
from bench.simulator import load_curves

RESULTS = ROOT / "bench" / "results" / "deadline_cpu.md"
BURST = 10


def history_rows(memory: World) -> list[dict[str, Any]]:
    """The memory's runs as history records, their overlaps as co-runner rows."""
    out = []
    for job, runs in memory.histories.items():
        for r in runs:
            sizes = r.get("co_runner_scale_outs") or {}
            out.append({
                "job": job, "status": "succeeded", "scale_out": r["scale_out"],
                "runtime_s": r["runtime_s"], "started_at": r["started_at"] + 2e9,
                "finished_at": r["finished_at"] + 2e9, "submitted_at": r["started_at"] + 2e9,
                "target_s": r.get("target_s"), "predicted_s": r.get("predicted_s"),
                "model": r.get("model"),
                "colocations": [{"co_runner_job": other, "overlap_ratio": min(ratio, 1.0),
                                 "co_runner_scale_out": int(sizes.get(other) or 16)}
                                for other, ratio in (r.get("overlaps") or {}).items()
                                if ratio > 0]})
    return out


def _cpu_of(argv: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"bench.deadline_cpu: {' '.join(argv)} failed: {done.stderr[-500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def burst_rows(db: Path, curves: Any, now: float, submits: int = BURST - 1) -> None:
    """`submits` submits with deadlines decided in turn, as `cobell submit` records them."""
    from cobell_cli import config
    from cobell_cli.api import deadlines
    from cobell_cli.cluster.none import NoCluster
    from cobell_cli.store.history import History

    settings = config.load({"db": str(db), "max_scale_out": 60, "min_scale_out": 4}, None)
    for i in range(submits):
        job = JOBS[i % len(JOBS)]
        deadline = now + 2.0 * curves[job].median_s(REF_SCALE_OUT)
        request = deadlines.DeadlineRequest(deadline_at=deadline, submitted_at=now + i / 100)
        with History.open(db, read_only=True) as history:
            planned = deadlines.plan_for_deadline(
                history, NoCluster(), settings, job=job, target_s=None, request=request,
                now=now + i / 100, require_history=False)
        deadlines.decide_and_record(db, planned, now + i / 100, None, pid=os.getpid())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="2 repeats; prints, writes nothing")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    repeats = 2 if args.quick else args.repeats
    from cobell_cli.store.history import History

    curves = load_curves(DEFAULT_DATA)
    memory = warmed(curves, truth("simulator"), TUNING_SEED, 10)
    work = Path(tempfile.mkdtemp(prefix="cobell-deadline-cpu-"))
    alone, crowded = work / "alone.db", work / "burst.db"
    for db in (alone, crowded):
        with History.open(db) as history:
            history.insert_runs(history_rows(memory), keep_ids=False)
    # bench.latency's child environment: an installed cobell has its bytecode compiled, so
    # the warm-up runs write it (here under a scratch prefix), and no timed run compiles
    env = {**child_env(work), "PYTHONPYCACHEPREFIX": str(work / "pycache"),
           "COBELL_MIN_SCALE_OUT": "4", "COBELL_MAX_SCALE_OUT": "60"}
    cobell = [sys.executable, "-m", "cobell_cli"]
    for job in JOBS:  # the cache as `cobell submit` leaves it
        for db in (alone, crowded):
            _cpu_of([*cobell, "--db", str(db), "predict", "-j", job, "-t", "600", "--cluster",
                     "none"], env)
    burst_rows(crowded, curves, time.time())
    for db in (alone, crowded):  # the deadline path's modules compiled once, as installed
        _cpu_of([*cobell, "--db", str(db), "predict", "-j", "sgd", "--deadline", "+1h",
                 "--cluster", "none"], env)
    deadline_s = int(2.0 * curves["sgd"].median_s(REF_SCALE_OUT))
    commands = {
        "predict -t (one predict)": [*cobell, "--db", str(alone), "predict", "-j", "sgd", "-t",
                                     str(deadline_s), "--cluster", "none"],
        "predict --deadline, alone": [*cobell, "--db", str(alone), "predict", "-j", "sgd",
                                      "--deadline", f"+{deadline_s}s", "--cluster", "none"],
        f"predict --deadline, {BURST - 1} others": [
            *cobell, "--db", str(crowded), "predict", "-j", "sgd", "--deadline",
            f"+{deadline_s}s", "--cluster", "none"],
    }
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    started = time.perf_counter()
    for _ in range(repeats):
        for name, command in commands.items():
            cpu[name].append(_cpu_of(command, env))
    base = statistics.median(cpu["predict -t (one predict)"])
    lines = ["# A deadline decision's CPU time next to one predict's", "",
             f"Command: `python -m bench.deadline_cpu{' --quick' if args.quick else ''}` "
             f"({time.perf_counter() - started:.0f} s; CPU time of each child process, the"
             f" median of {repeats}, the commands alternating; on the shared 2-core machine).",
             "", (__doc__ or "").split("\n\n", 2)[2].split("\n\nGoal")[0].replace("\n", " "),
             "", "| command | CPU s (median) | min | max | / one predict |",
             "|---|---|---|---|---|"]
    for name, values in cpu.items():
        mid = statistics.median(values)
        lines.append(f"| {name} | {mid:.3f} | {min(values):.3f} | {max(values):.3f} |"
                     f" {mid / base:.2f} |")
    worst = max(statistics.median(v) for v in cpu.values()) / base
    lines += ["", f"Goal (<= 2x one predict's, also inside a burst of {BURST}): "
              + ("met" if worst <= 2 else "not met") + f" (worst {worst:.2f}x)."]
    publish("\n".join(lines) + "\n", None if args.quick else args.output)


if __name__ == "__main__":
    main()

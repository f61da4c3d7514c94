#!/usr/bin/env python3
"""Record history/colocation-local.csv: real co-location runs on a local Spark standalone cluster.

A target job (colocation-jobs/target.py: map stage, shuffle, reduce) at scale-outs 1-4, alone
or overlapping one or two co-runners of different kinds (colocation-jobs/shuffle.py,
shuffle-heavy; colocation-jobs/scan.py, scan-heavy), each co-runner at scale-out 2, started
at a random offset from the target (-15 to +30 s: negative starts the target first). Every
run, target and co-runners, goes through `cobell submit`, which measures the runtime and the
overlap with every co-runner, exactly as in production. The cells (scale-out x co-runners)
are visited in a random order, `--reps` times each.

    python history/record-colocation.py [--reps 3] [--seed 13] [--out history/colocation-local.csv]

Takes about two hours on a 2-core machine (4 x 4 x 3 = 48 target runs). Runtimes depend on the
machine and on what else it runs: every cell waits for a quiet machine (bench/quiet.py: 1-minute
load average below 1.5, and the lock named by COBELL_QUIET_LOCK held alone); the load average
before and after each run is kept in the side file (`--meta`, JSON lines).

The test set (history/colocation-test.csv, recorded after the model was frozen: another seed,
other job parameters, one co-runner at a time, six one-core workers, whatever load the shared
machine had; 4 x 3 x 2 = 24 cells in a shuffled order) in chunks that hold the machine's
heavy lock for at most ~20 minutes each (`--minutes`: start no new cell after it) and continue
one history (`--work`; the next chunk's `--start` is the number of cells recorded so far, the
lines of the `--meta` file):

    python history/record-colocation.py --seed 2311 --reps 2 --conditions single \
        --workers 6 --cores-per-worker 1 --memory-per-worker 2g --executor-memory 768m \
        --target-args "--tasks 30 --cpu-s 0.9 --sleep-s 1.0 --records 15000 --reducers 6" \
        --co-runner-args "colo-shuffle=--rounds 2 --partitions 12" \
        --co-runner-args "colo-scan={scan_input} --rounds 5 --partitions 6" \
        --work /tmp/colo-test --start 0 --cells 12 \
        --out history/colocation-test.csv --meta history/colocation-test.meta.jsonl

The export at the end of every chunk rewrites --out with every run recorded so far.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.quiet import quiet_run  # noqa: E402

JOBS = ROOT / "history" / "colocation-jobs"
TARGET_JOB = "colo-target"
CO_RUNNERS = {
    "colo-shuffle": ["shuffle.py", "--rounds", "3"],
    "colo-scan": ["scan.py", "{scan_input}", "--rounds", "4"],
}
CONDITIONS = {"pairs": ((), ("colo-shuffle",), ("colo-scan",), ("colo-shuffle", "colo-scan")),
              "single": ((), ("colo-shuffle",), ("colo-scan",))}
SCALE_OUTS = (1, 2, 3, 4)
CO_RUNNER_SCALE_OUT = 2
OFFSET_S = (-15.0, 30.0)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cobell(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cobell_cli", *args], env=env, text=True,
                          capture_output=True, cwd=ROOT)


def write_scan_input(path: Path, mb: int) -> None:
    rng = random.Random(7)
    with path.open("w") as f:
        while f.tell() < mb * 1_000_000:
            f.write("".join(f"{rng.randrange(10**12):012d} {'ab' * rng.randrange(5, 60)}\n"
                            for _ in range(10000)))


class Recorder:
    def __init__(self, work: Path, master: str, webui: str, submit: Path, scan_input: Path,
                 target_args: list[str], env: dict[str, str], executor_memory: str = "512m",
                 co_runners: dict[str, list[str]] | None = None) -> None:
        self.work, self.master, self.webui = work, master, webui
        self.submit, self.scan_input, self.env = submit, scan_input, env
        self.target_args = target_args
        self.executor_memory = executor_memory
        self.co_runners = CO_RUNNERS if co_runners is None else co_runners

    def start(self, job: str, scale_out: int, script: list[str]) -> subprocess.Popen[str]:
        argv = [sys.executable, "-m", "cobell_cli", "submit", "-j", job, "-t", "3600",
                "--confidence", "point", "--min-scale-out", str(scale_out),
                "--max-scale-out", str(scale_out), "--cluster", "standalone",
                "--standalone-url", self.webui, "--json", "--",
                str(self.submit), "--master", self.master,
                "--executor-memory", self.executor_memory,
                "--driver-memory", "512m",
                str(JOBS / script[0]), *[a.format(scan_input=self.scan_input) for a in script[1:]]]
        return subprocess.Popen(argv, env=self.env, cwd=ROOT, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def cell(self, scale_out: int, co_runners: tuple[str, ...], offset_s: float) -> dict:
        with quiet_run() as quiet:
            row = self._cell(scale_out, co_runners, offset_s)
        return {**row, "load_before": quiet["load_before"], "waited_s": round(quiet["waited_s"])}

    def _cell(self, scale_out: int, co_runners: tuple[str, ...], offset_s: float) -> dict:
        procs: dict[str, subprocess.Popen[str]] = {}

        def start_co_runners() -> None:
            for name in co_runners:
                procs[name] = self.start(name, CO_RUNNER_SCALE_OUT, self.co_runners[name])

        if co_runners and offset_s >= 0:
            start_co_runners()
            time.sleep(offset_s)
        procs[TARGET_JOB] = self.start(TARGET_JOB, scale_out, ["target.py", *self.target_args])
        if co_runners and offset_s < 0:
            time.sleep(-offset_s)
            start_co_runners()
        results = {}
        for name, proc in procs.items():
            out, _ = proc.communicate()
            lines = [line for line in out.splitlines() if line.startswith("{")]
            results[name] = json.loads(lines[-1]) if lines else {"exit": proc.returncode}
        return {"scale_out": scale_out, "co_runners": list(co_runners), "offset_s": offset_s,
                "load_after": os.getloadavg()[0],
                "results": results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", type=Path, default=ROOT / "history" / "colocation-local.csv")
    parser.add_argument("--meta", type=Path, default=None,
                        help="JSON lines: one per cell (offsets, load average, summaries)")
    parser.add_argument("--scan-mb", type=int, default=120)
    parser.add_argument("--target-args", default="--tasks 24",
                        help="arguments of target.py")
    parser.add_argument("--cells", type=int, default=None, help="stop after this many cells")
    parser.add_argument("--minutes", type=float, default=None,
                        help="start no new cell after this many minutes (a lock hold's budget)")
    parser.add_argument("--start", type=int, default=0,
                        help="first cell (of the seed's shuffled list) to record: a later chunk")
    parser.add_argument("--work", type=Path, default=None,
                        help="directory kept between chunks (the history, the scan input)")
    parser.add_argument("--conditions", choices=sorted(CONDITIONS), default="pairs",
                        help="pairs: alone, each co-runner, both; single: at most one")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores-per-worker", type=int, default=5)
    parser.add_argument("--memory-per-worker", default="3g")
    parser.add_argument("--executor-memory", default="512m")
    parser.add_argument("--co-runner-args", action="append", default=[], metavar="JOB=ARGS",
                        help="a co-runner's script arguments (repeatable), e.g. "
                        "'colo-shuffle=--rounds 2'")
    args = parser.parse_args(argv)

    co_runners = dict(CO_RUNNERS)
    for item in args.co_runner_args:
        name, _, rest = item.partition("=")
        if name not in co_runners:
            parser.error(f"--co-runner-args: unknown co-runner {name!r}")
        co_runners[name] = [co_runners[name][0], *rest.split()]
    work = args.work or Path(tempfile.mkdtemp(prefix="cobell-colo-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "XDG_DATA_HOME": str(work / "data"), "SPARK_LOCAL_IP": "127.0.0.1",
           "COBELL_MODEL_CACHE": "off", "PYTHONPATH": str(ROOT)}
    scan_input = work / "scan-input.txt"
    if not scan_input.exists():
        write_scan_input(scan_input, args.scan_mb)
    port, ui = free_port(), free_port()
    started = cobell("local-cluster", "start", "--workers", str(args.workers),
                     "--cores-per-worker", str(args.cores_per_worker),
                     "--memory-per-worker", args.memory_per_worker, "--port", str(port),
                     "--webui-port", str(ui), "--timeout", "300", env=env)
    if started.returncode != 0:
        print(started.stderr, file=sys.stderr)
        return 1
    from cobell_cli.run.local_cluster import spark_submit_path

    rec = Recorder(work, f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui}",
                   spark_submit_path(), scan_input, args.target_args.split(), env,
                   args.executor_memory, co_runners)
    rng = random.Random(args.seed)
    cells = [(x, c) for x in SCALE_OUTS for c in CONDITIONS[args.conditions]] * args.reps
    rng.shuffle(cells)
    offsets = [round(rng.uniform(*OFFSET_S), 1) for _ in cells]  # as drawn cell by cell before
    stop = len(cells) if args.cells is None else min(len(cells), args.start + args.cells)
    meta = args.meta.open("a") if args.meta else None
    deadline = None if args.minutes is None else time.monotonic() + 60.0 * args.minutes
    try:
        for i in range(args.start, stop):
            if deadline is not None and time.monotonic() > deadline:
                print(f"time budget spent: next chunk --start {i}", file=sys.stderr)
                break
            (x, co), offset = cells[i], offsets[i]
            row = rec.cell(x, co, offset)
            print(f"[{i + 1}/{len(cells)}] x={x} co={'+'.join(co) or '-'} offset={offset} "
                  f"target={row['results'][TARGET_JOB].get('runtime_s')} "
                  f"load={row['load_before']:.1f}", file=sys.stderr, flush=True)
            if meta:
                meta.write(json.dumps(row) + "\n")
                meta.flush()
        exported = cobell("history", "export", "--format", "csv", env=env)
        if exported.returncode != 0:
            print(exported.stderr, file=sys.stderr)
            return 1
        args.out.write_text(exported.stdout)
        print(f"wrote {args.out}", file=sys.stderr)
    finally:
        cobell("local-cluster", "stop", env=env)
        if meta:
            meta.close()
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

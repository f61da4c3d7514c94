"""Import speed and memory: N finished apps from the YARN stand-in, and one big Spark event
log, each through the real CLI.

    python -m bench.import_speed [--apps 10000] [--event-log-mb 1024] [--output FILE] [--quick]

The stand-in RM (tests/yarn_standin.py, real HTTP on loopback) runs in a process of its own
with N finished apps, one starting every `--every-s` seconds for a random 60..1200 s, so an
app overlaps ~10 others (the co-locations are part of the work). Then
`cobell history import --from-yarn --json` runs as a child process into an empty history;
wall time and the child's peak RSS (`wait4`) are measured, and the RM's JSON volume (one
unpaged GET of all apps) gives MB/s. A second import of the same apps (all skipped as already
imported) is measured beside it.

Event log: bench/gen_event_log.py writes a realistic log of `--event-log-mb` MiB (real Spark 4
event shapes; jobs of three stages, ~260 000 tasks per GiB, dynamic allocation) into a
temporary directory under /tmp, plain and zstd-compressed; `cobell history import
--from-event-logs FILE --json` imports each into an empty history, which reads the log once
for the run and its what-if profile (stored in run_profiles). MB/s is the log's uncompressed
size over the wall time. Goal (issue 14) for both: >= 50 MB/s or <= 60 s, peak RSS <= 300 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import publish

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "import_speed.md"
GOAL_S, GOAL_MBPS, GOAL_RSS_MB = 60.0, 50.0, 300.0

SERVE = """
import json, random, sys, time
from tests.yarn_standin import running_standin
n, every, seed = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
with running_standin() as rm:
    rm.now_s = time.time()
    start = rm.now_s - n * every - 2000
    for k in range(n):
        rm.add_app(f"job{k % 40}", executors=rng.randint(1, 16), start_s=start + k * every,
                   duration_s=rng.uniform(60, 1200), tags=f"cobell-job:job{k % 40}")
    print(json.dumps({"url": rm.url}), flush=True)
    sys.stdin.read()
"""


def start_rm(apps: int, every_s: float, seed: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(apps), str(every_s), str(seed)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    url = json.loads(proc.stdout.readline())["url"]
    return proc, url


def json_bytes(url: str) -> int:
    import requests

    params = {"states": "FINISHED,FAILED,KILLED", "finishedTimeBegin": 0}
    return len(requests.get(f"{url}/ws/v1/cluster/apps", params=params, timeout=120).content)


def timed_import(db: Path, url: str) -> dict[str, Any]:
    """One CLI import from the RM as a child process (see timed_cli)."""
    return timed_cli(db, ["--from-yarn", "--rm-url", url, "--since", "3650d"])


def timed_cli(db: Path, source: list[str]) -> dict[str, Any]:
    """One `history import ... --json` as a child process: wall seconds, its own peak RSS
    (MB), its summary."""
    argv = [sys.executable, "-m", "cobell_cli", "--db", str(db), "history", "import"]
    argv += [*source, "--json"]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"import failed: {err.read().decode().strip()}")
        summary = json.loads(out.read())
    return {"wall_s": wall, "rss_mb": usage.ru_maxrss / 1024.0, "summary": summary}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=10_000)
    parser.add_argument("--every-s", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--event-log-mb", type=float, default=1024.0, help="0: no event log")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument(
        "--quick", action="store_true", help="300 apps, a 10 MiB log; print, write nothing"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.apps, args.event_log_mb, args.output = 300, 10.0, None
    rm, url = start_rm(args.apps, args.every_s, args.seed)
    try:
        volume = json_bytes(url)
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "h.db"
            first = timed_import(db, url)
            again = timed_import(db, url)
    finally:
        assert rm.stdin is not None
        rm.stdin.close()
        rm.wait(timeout=30)
    report = render(args, volume, first, again)
    if args.event_log_mb > 0:
        report += render_event_logs(args, event_log_runs(args.event_log_mb, args.seed))
    publish(report, args.output)
    return 0


def event_log_runs(size_mb: float, seed: int) -> list[dict[str, Any]]:
    """Generate the log plain and zstd under /tmp, import each into an empty history."""
    import sqlite3

    from bench.gen_event_log import generate

    runs = []
    with tempfile.TemporaryDirectory(prefix="cobell-bench-eventlog-") as tmp:
        for codec, name in (("plain", f"app-{seed:04d}"), ("zstd", f"app-{seed:04d}.zstd")):
            log = Path(tmp) / name
            size = generate(log, size_mb, zstd=codec == "zstd", seed=seed)
            db = Path(tmp) / f"{codec}.db"
            run = timed_cli(db, ["--from-event-logs", str(log)])
            with sqlite3.connect(db) as conn:
                (summary,) = conn.execute("SELECT summary FROM run_profiles").fetchone()
                scale = conn.execute("SELECT scale_out, mean_scale_out FROM runs").fetchone()
            conn.close()
            profile = json.loads(summary)
            tasks = sum(len(stage["task_s"]) for stage in profile["stages"])
            run.update(codec=codec, bytes=size, on_disk=log.stat().st_size, tasks=tasks)
            run.update(stages=len(profile["stages"]), scale=scale)
            log.unlink()  # a GiB under /tmp: gone before the next one is written
            runs.append(run)
    return runs


def verdict(ok_time: bool, ok_rss: bool) -> str:
    return (
        f"Goal: <= {GOAL_S:.0f} s or >= {GOAL_MBPS:.0f} MB/s: "
        f"{'met' if ok_time else 'NOT met'}; peak RSS <= {GOAL_RSS_MB:.0f} MB: "
        f"{'met' if ok_rss else 'NOT met'}."
    )


def render_event_logs(args: argparse.Namespace, runs: list[dict[str, Any]]) -> str:
    load = os.getloadavg()
    first = runs[0]
    lines = [
        "# Import speed: one Spark event log",
        "",
        f"Command: the same. Load average "
        f"{load[0]:.1f} at the end. A {first['bytes'] / 2**20:.0f} MiB log written by "
        "bench/gen_event_log.py (real Spark 4 event shapes, "
        f"{first['stages']} stages, {first['tasks']} tasks, 16 executors of 4 cores, a quarter "
        "of them given back for the middle third), imported by the real CLI "
        "(`cobell history import --from-event-logs FILE --json`, a child process) into an "
        "empty history: one pass over the log gives the run and its what-if profile "
        "(run_profiles). MB/s = uncompressed MB / wall s.",
        "",
        "| log | on disk MB | events MB | wall s | MB/s | peak RSS MB | run | profile tasks |",
        "|---|---|---|---|---|---|---|---|",
    ]
    ok_time = ok_rss = True
    for run in runs:
        mb = run["bytes"] / 1e6
        s = run["summary"]
        assert s["imported"] == 1 and s["profiles"] == 1, s
        peak, mean = run["scale"]
        lines.append(
            f"| {run['codec']} | {run['on_disk'] / 1e6:.0f} | {mb:.0f} | {run['wall_s']:.1f} | "
            f"{mb / run['wall_s']:.1f} | {run['rss_mb']:.0f} | scale-out {peak} "
            f"(mean {mean:.2f}) | {run['tasks']} |"
        )
        ok_time &= run["wall_s"] <= GOAL_S or mb / run["wall_s"] >= GOAL_MBPS
        ok_rss &= run["rss_mb"] <= GOAL_RSS_MB
    return "\n".join([*lines, "", verdict(ok_time, ok_rss), ""])


def render(args: argparse.Namespace, volume: int, first: dict, again: dict) -> str:
    mb = volume / 1e6
    load = os.getloadavg()
    lines = [
        "# Import speed: finished apps from the YARN RM",
        "",
        f"Command: `python -m bench.import_speed --apps {args.apps} --event-log-mb "
        f"{args.event_log_mb:g}` (from the repository "
        f"root). Machine: {os.cpu_count()} cores, "
        f"load average {load[0]:.1f} at the end (shared with other jobs).",
        "",
        f"{args.apps} finished apps on the stand-in RM (tests/yarn_standin.py, its own process, "
        f"real HTTP on loopback), one starting every {args.every_s:g} s for 60..1200 s. "
        f"All apps as one unpaged RM answer: {mb:.1f} MB of JSON. The import is the real CLI "
        "(`cobell history import --from-yarn --json`) in a child process; peak RSS is the "
        "child's maximum resident set (getrusage). The RM side (rendering, paging by "
        "finishedTime windows) runs on the same 2 cores.",
        "",
        "| run | apps imported | skipped | co-locations | wall s | MB/s (RM JSON) | peak RSS MB |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, run in (("first import", first), ("again (all already imported)", again)):
        s = run["summary"]
        lines.append(
            f"| {label} | {s['imported']} | {s['skipped']} | {s['colocations']} | "
            f"{run['wall_s']:.1f} | {mb / run['wall_s']:.1f} | {run['rss_mb']:.0f} |"
        )
    ok_time = first["wall_s"] <= GOAL_S or mb / first["wall_s"] >= GOAL_MBPS
    ok_rss = max(first["rss_mb"], again["rss_mb"]) <= GOAL_RSS_MB
    return "\n".join([*lines, "", verdict(ok_time, ok_rss), ""])


if __name__ == "__main__":
    raise SystemExit(main())

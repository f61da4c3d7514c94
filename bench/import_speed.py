"""Import speed and memory: N finished apps from the YARN stand-in, through the real CLI.

    python -m bench.import_speed [--apps 10000] [--output FILE] [--quick]

The stand-in RM (tests/yarn_standin.py, real HTTP on loopback) runs in a process of its own
with N finished apps, one starting every `--every-s` seconds for a random 60..1200 s, so an
app overlaps ~10 others (the co-locations are part of the work). Then
`cobell history import --from-yarn --json` runs as a child process into an empty history;
wall time and the child's peak RSS (`wait4`) are measured, and the RM's JSON volume (one
unpaged GET of all apps) gives MB/s. A second import of the same apps (all skipped as already
imported) is measured beside it. Goal (issue 14): >= 50 MB/s or <= 60 s, peak RSS <= 300 MB.
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
    """One CLI import as a child process: wall seconds, its own peak RSS (MB), its summary."""
    argv = [sys.executable, "-m", "cobell_cli", "--db", str(db), "history", "import"]
    argv += ["--from-yarn", "--rm-url", url, "--since", "3650d", "--json"]
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
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--quick", action="store_true", help="300 apps; print, write nothing")
    args = parser.parse_args(argv)
    if args.quick:
        args.apps, args.output = 300, None
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
    if args.output is not None:
        args.output.write_text(report)
    print(report)
    return 0


def render(args: argparse.Namespace, volume: int, first: dict, again: dict) -> str:
    mb = volume / 1e6
    load = os.getloadavg()
    lines = [
        "# Import speed: finished apps from the YARN RM",
        "",
        f"Command: `python -m bench.import_speed --apps {args.apps}` (from the repository "
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
        "| run | apps imported | skipped | co-locations | wall s | MB/s (RM JSON) | "
        "peak RSS MB |",
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
    lines += [
        "",
        f"Goal: <= {GOAL_S:.0f} s or >= {GOAL_MBPS:.0f} MB/s: "
        f"{'met' if ok_time else 'NOT met'}; peak RSS <= {GOAL_RSS_MB:.0f} MB: "
        f"{'met' if ok_rss else 'NOT met'}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())

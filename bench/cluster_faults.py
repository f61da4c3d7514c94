"""Cluster faults: the wall time `cobell predict` and `cobell submit` lose to a sick YARN RM.

    python -m bench.cluster_faults [--before /work/main] [--output FILE] [--quick]

Each fault is a stand-in RM (tests/yarn_standin.py, real HTTP on loopback, served by this
process): one RM that accepts the connection and never answers; an HA pair that both do; an
RM that sends its headers at once and then the body one byte per second; and one that
trickles the whole response (status line and headers too) one byte per second. For each,
the real CLI runs as a child process with the repository's default settings:

- `cobell predict --job sgd -t 300 --rm-url ...` (exit 4: no co-runner information);
- `cobell submit --job sgd -t 300 --allow-no-cluster --rm-url ... -- sh -c 'touch FILE'`:
  when the job started (the file's mtime) and when cobell exited (its post-run co-runner query asks
  the same sick RM again).

`--before PATH` measures another checkout (its `.venv`) beside this one, e.g. the main
branch before the total cluster budget. A child still running after `--kill-after-s` is
killed and reported as "> N s". The same commands with `--cluster none` give the healthy
baseline. `--quick`: this checkout only, a 2 s budget, the hanging RM only; prints, writes
nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.checkouts import command_line, publish, python_of

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "cluster_faults.md"
EXAMPLE = ROOT / "history" / "example.csv"
JOB, TARGET_S = "sgd", 300
FAULTS = {
    "hanging RM": [{"hang": True}],
    "HA pair, both hanging": [{"hang": True}, {"hang": True}],
    "RM trickling its body, 1 byte/s": [{"trickle": "body"}],
    "RM trickling the whole answer, 1 byte/s": [{"trickle": "all"}],
}


@dataclass
class Timing:
    wall_s: float | None  # None: killed after kill_after_s
    exit_code: int | None
    started_after_s: float | None = None  # submit: when the job's command ran


@contextmanager
def sick_rms(switches: Sequence[dict[str, object]]) -> Iterator[list[str]]:
    """Stand-in RMs with the given fault switches; their URLs."""
    if str(ROOT) not in sys.path:  # the stand-in lives in the repository's tests/
        sys.path.insert(0, str(ROOT))
    from tests.yarn_standin import running_standin

    with ExitStack() as stack:
        yield [stack.enter_context(running_standin(**s)).url for s in switches]  # type: ignore[arg-type]


def run_cobell(
    checkout: Path, args: Sequence[str], env: dict[str, str], kill_after_s: float
) -> Timing:
    argv = [python_of(checkout), "-m", "cobell_cli", *args]
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            argv, cwd=checkout, env=env, capture_output=True, timeout=kill_after_s, check=False
        )
    except subprocess.TimeoutExpired:
        return Timing(None, None)
    return Timing(time.perf_counter() - started, proc.returncode)


def prepare(checkout: Path, home: Path, env: dict[str, str]) -> list[str]:
    """A history with the example runs, and a warm model cache: the cluster is all that waits."""
    db = home / "history.db"
    base = ["--db", str(db)]
    for args in (
        ["history", "import", str(EXAMPLE)],
        ["predict", "--job", JOB, "-t", str(TARGET_S), "--cluster", "none"],
    ):
        done = run_cobell(checkout, [*base, *args], env, 120)
        if done.exit_code != 0:
            raise SystemExit(f"setup failed in {checkout}: cobell {' '.join(args)}")
    return base


def measure(
    checkout: Path, urls: Sequence[str] | None, kill_after_s: float, budget_s: float | None
) -> dict[str, Timing]:
    """predict and submit --allow-no-cluster against `urls` (None: --cluster none)."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("COBELL_")}
        env.update(XDG_DATA_HOME=tmp, XDG_CONFIG_HOME=tmp, XDG_CACHE_HOME=tmp)
        if budget_s is not None:
            env["COBELL_CLUSTER_BUDGET_S"] = str(budget_s)
        base = prepare(checkout, home, env)
        where = ["--cluster", "none"] if urls is None else ["--cluster", "yarn"]
        for url in urls or ():
            where += ["--rm-url", url]
        plan = ["--job", JOB, "-t", str(TARGET_S), *where]
        predict = run_cobell(checkout, [*base, "predict", *plan], env, kill_after_s)
        marker = home / "job-started"
        launched = time.time()
        submit = run_cobell(
            checkout,
            [*base, "submit", *plan, "--allow-no-cluster", "--", *touch(marker)],
            env,
            kill_after_s,
        )
        if marker.exists():
            submit.started_after_s = marker.stat().st_mtime - launched
    return {"predict": predict, "submit": submit}


def touch(marker: Path) -> list[str]:
    """A job that only touches `marker` (cobell needs a place for the scale-out: $1)."""
    return ["sh", "-c", 'touch "$0"', str(marker), "{scale_out}"]


def seconds(value: float | None, kill_after_s: float) -> str:
    return f"> {kill_after_s:.0f} (killed)" if value is None else f"{value:.1f}"


def render(
    rows: list[tuple[str, str, dict[str, Timing]]], args: argparse.Namespace, command: str
) -> str:
    load = os.getloadavg()
    k = args.kill_after_s
    lines = [
        "# Cluster faults: wall time lost to a sick YARN ResourceManager",
        "",
        f"Command: `{command}` (from the repository root). Machine: {os.cpu_count()} cores, "
        f"load average {load[0]:.1f} at the end (shared with other jobs).",
        "",
        "Stand-in RMs (tests/yarn_standin.py: real HTTP on loopback, served by the benchmark "
        "process). Every command is the real CLI in a child process, with default settings "
        "(`timeout_s` 10, `retries` 2, and on this branch `cluster_budget_s` "
        f"{args.budget_label}), a history holding history/example.csv and a warm model cache. "
        "`predict` exits 4 (no co-runner information); `submit --allow-no-cluster -- sh -c "
        "'touch FILE'` plans without co-runners: *job started* is when FILE was touched, *submit "
        "exited* includes the post-run co-runner query (it asks the same RM again). All in "
        "seconds from the process start.",
        "",
        "| checkout | fault | predict (exit) | submit: job started | submit exited (exit) |",
        "|---|---|---|---|---|",
    ]
    for checkout, fault, timing in rows:
        p, s = timing["predict"], timing["submit"]
        lines.append(
            f"| {checkout} | {fault} | {seconds(p.wall_s, k)} ({p.exit_code}) | "
            f"{seconds(s.started_after_s, k)} | {seconds(s.wall_s, k)} ({s.exit_code}) |"
        )
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, default=None, help="another checkout to measure")
    parser.add_argument("--kill-after-s", type=float, default=150.0)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--quick", action="store_true", help="2 s budget, hanging RM only")
    args = parser.parse_args(argv)
    budget_s = None
    faults = FAULTS
    if args.quick:
        budget_s, args.output, args.before = 2.0, None, None
        faults = {"hanging RM": FAULTS["hanging RM"]}
    args.budget_label = f"{budget_s:g} (COBELL_CLUSTER_BUDGET_S)" if budget_s else "default"
    checkouts = [("this branch", ROOT)]
    if args.before is not None:
        checkouts.insert(0, (f"before ({args.before.name})", args.before.resolve()))
    rows: list[tuple[str, str, dict[str, Timing]]] = []
    for label, checkout in checkouts:
        rows.append((label, "healthy (`--cluster none`)", measure(checkout, None, 120, budget_s)))
        for fault, switches in faults.items():
            with sick_rms(switches) as urls:
                rows.append((label, fault, measure(checkout, urls, args.kill_after_s, budget_s)))
            print(f"{label}: {fault} done", file=sys.stderr, flush=True)
    command = command_line("bench.cluster_faults", quick=args.quick, before=args.before)
    publish(render(rows, args, command), args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

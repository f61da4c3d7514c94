"""History import/export memory: peak RSS and wall time of the real CLI at 10^5 and 10^6 runs.

    python -m bench.history_memory [--rows 100000 1000000] [--before /work/main]
                                   [--output FILE] [--quick]

For each size a cobell CSV history of that many runs is written (seeded: 40 jobs, ~550 bytes
a row as real records are: a command, a reason, one or two co-runners on a third of them),
then, each as a child process whose peak RSS comes from getrusage (`wait4`):

1. `cobell history import runs.csv` into an empty history;
2. `cobell history export --format csv -o out.csv` and `--format json -o out.json` of the
   history this checkout imported;
3. `cobell history import out.json` (this checkout's export) into an empty history.

`--before PATH` runs each step with another checkout (its `.venv`) too, in the same run, e.g.
main before streaming, on the same inputs (this checkout's history and JSON export, so that
its exports are measured even when its import fails); its children get an address-space
limit (`--before-limit-mb`) so that a whole-file import cannot take the shared machine down:
a step that hits it is reported as failed. Every exported CSV must hold the generated rows
(checked).
Goal (issue 15, item 15): 10^6 runs with peak RSS <= 200 MB. `--quick`: 2000 runs, this
checkout only; prints, writes nothing.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.checkouts import command_line, publish, python_of
from cobell_cli.store.interchange import EXPORT_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "history_memory.md"
GOAL_ROWS, GOAL_RSS_MB = 1_000_000, 200.0
STEPS = ("import csv", "export csv", "export json", "import json")


@dataclass
class Step:
    wall_s: float
    rss_mb: float
    ok: bool
    error: str = ""


WRITTEN_COLUMNS = (  # the columns write_history fills, in the order of its values
    "id", "job", "input_bytes", "scale_out", "backend", "app_id", "queue", "user", "host",
    "pid", "submitted_at", "started_at", "finished_at", "runtime_s", "status", "target_s",
    "predicted_s", "model", "reason", "command", "exit_code", "source", "mean_scale_out",
    "meet_probability", "confidence", "event_log", "colocations",
)


def write_history(path: Path, rows: int, seed: int = 1) -> None:
    """`rows` runs in cobell's CSV format, streamed to `path`."""
    rng = random.Random(seed)
    t0 = 1_600_000_000.0
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(EXPORT_COLUMNS)
        for k in range(1, rows + 1):
            job = f"job-{k % 40:02d}"
            scale_out = rng.randint(1, 64)
            runtime_s = round(rng.uniform(60, 3600), 3)
            started = t0 + k * 37.0
            colocations = ""
            if k % 3 == 0:
                co = [
                    {
                        "co_runner_app_id": f"application_1600000000000_{k + j:06d}",
                        "co_runner_job": f"job-{(k + j) % 40:02d}",
                        "co_runner_scale_out": rng.randint(1, 32),
                        "co_runner_started_at": started - 100.0,
                        "co_runner_finished_at": started + 200.0,
                        "overlap_s": 200.0,
                        "overlap_ratio": round(min(200.0 / runtime_s, 1.0), 6),
                    }
                    for j in range(1 + k % 2)
                ]
                colocations = json.dumps(co, separators=(",", ":"))
            command = json.dumps(
                ["spark-submit", "--master", "yarn", "--num-executors", str(scale_out),
                 "--class", "org.example.Nightly", f"/jobs/{job}.jar", "--date", str(k)]
            )  # fmt: skip
            row = dict(zip(WRITTEN_COLUMNS, [
                k, job, rng.randint(10**9, 10**11), scale_out, "yarn",
                f"application_1600000000000_{k:06d}", "default", "etl", "edge-1", 4000 + k % 30000,
                started - 5.0, started, started + runtime_s, runtime_s, "succeeded", 3600.0,
                round(runtime_s * rng.uniform(0.8, 1.2), 3), "bell",
                "smallest scale-out whose estimated probability of meeting the target is >= 0.97",
                command, 0, "cobell", "", round(rng.uniform(0.5, 1.0), 6), 0.97, "",
                colocations,
            ], strict=True))  # fmt: skip
            # by name: columns added to the history later stay empty (their defaults)
            writer.writerow([row.get(column, "") for column in EXPORT_COLUMNS])


def run_step(
    checkout: Path, args: Sequence[str], env: dict[str, str], limit_mb: int | None
) -> Step:
    """One CLI call as a child process: wall seconds and its own peak RSS (MB)."""

    def limit() -> None:
        if limit_mb is not None:
            size = limit_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (size, size))

    argv = [python_of(checkout), "-m", "cobell_cli", *args]
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            argv, cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=err, preexec_fn=limit
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall_s = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        err.seek(0)
        message = err.read().decode(errors="replace").strip().splitlines()
    return Step(wall_s, usage.ru_maxrss / 1024.0, code == 0, "" if code == 0 else message[-1:][0])


Checkout = tuple[str, Path, "int | None"]  # label, path, address-space limit (MB)


def measure(checkouts: Sequence[Checkout], source: Path) -> dict[str, dict[str, Step]]:
    """Every step for every checkout; the exports read, and the JSON import reads, what the
    last checkout (this one) imported and exported, so that a checkout whose import fails
    still has its exports measured."""
    steps: dict[str, dict[str, Step]] = {label: {} for label, _, _ in checkouts}
    with tempfile.TemporaryDirectory(dir=source.parent) as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("COBELL_")}
        env.update(XDG_DATA_HOME=tmp, XDG_CONFIG_HOME=tmp, XDG_CACHE_HOME=tmp)

        def step(k: int, name: str, args: list[str]) -> Step:
            label, checkout, limit_mb = checkouts[k]
            steps[label][name] = run_step(checkout, args, env, limit_mb)
            return steps[label][name]

        last = len(checkouts) - 1
        for k in range(len(checkouts)):
            step(k, "import csv", ["--db", str(work / f"{k}.db"), "history", "import", str(source)])
        if not steps[checkouts[last][0]]["import csv"].ok:
            raise SystemExit(f"{checkouts[last][1]}: the import failed")
        history = ["--db", str(work / f"{last}.db"), "history", "export"]
        for k in range(len(checkouts)):
            out_csv, out_json = work / f"{k}.csv", work / f"{k}.json"
            if step(k, "export csv", [*history, "-o", str(out_csv)]).ok and not same_rows(
                source, out_csv
            ):
                raise SystemExit(f"{checkouts[k][1]}: the exported CSV differs from the source")
            step(k, "export json", [*history, "-f", "json", "-o", str(out_json)])
            out_csv.unlink(missing_ok=True)
        exported = work / f"{last}.json"
        for k in range(len(checkouts)):
            step(k, "import json", ["--db", str(work / f"j{k}.db"), "history", "import",
                                    str(exported)])  # fmt: skip
    return steps


def same_rows(a: Path, b: Path) -> bool:
    """The same runs, compared as parsed rows (numbers may be written differently)."""
    with a.open(newline="") as fa, b.open(newline="") as fb:
        ra, rb = csv.DictReader(fa), csv.DictReader(fb)
        for left, right in zip(ra, rb, strict=True):
            for key in ("id", "job", "scale_out", "status", "app_id", "command"):
                if left[key] != right[key]:
                    return False
            if json.loads(left["colocations"] or "[]") != json.loads(right["colocations"] or "[]"):
                return False
    return True


def cell(step: Step | None) -> str:
    if step is None:
        return "not run"
    if not step.ok:
        return f"failed after {step.wall_s:.1f} s, peak {step.rss_mb:.0f} MB ({step.error[:80]})"
    return f"{step.wall_s:.1f} s, {step.rss_mb:.0f} MB"


def render(results: list[tuple[int, float, dict[str, dict[str, Step]]]], labels: list[str],
           command: str, limit_mb: int) -> str:
    load = os.getloadavg()
    lines = [
        "# History import/export memory",
        "",
        f"Command: `{command}` (from the repository root). Machine: {os.cpu_count()} cores, "
        f"load average {load[0]:.1f} at the end (shared with other jobs).",
        "",
        "Each step is the real CLI in a child process; peak RSS is that child's maximum "
        "resident set (getrusage via `wait4`), wall time includes start-up. The CSV holds "
        "generated runs (40 jobs, a command and a reason each, one or two co-runners on a "
        "third of them); `export csv` must give back the imported rows (checked). "
        f"Before-side children run under a {limit_mb} MB address-space limit "
        "(RLIMIT_AS), so that a whole-file import cannot exhaust the shared machine.",
        "",
        "| runs | file MB | step | " + " | ".join(labels) + " |",
        "|---|---|---|" + "---|" * len(labels),
    ]
    for rows, mb, by_label in results:
        for step in STEPS:
            cells = [cell(by_label.get(label, {}).get(step)) for label in labels]
            lines.append(f"| {rows:,} | {mb:.0f} | {step} | " + " | ".join(cells) + " |")
    after = labels[-1]
    peak = max(
        (s.rss_mb for rows, _, by in results if rows >= GOAL_ROWS for s in by[after].values()),
        default=None,
    )
    failed = any(not s.ok for rows, _, by in results for s in by[after].values())
    if peak is not None:
        met = peak <= GOAL_RSS_MB and not failed
        lines += ["", f"Goal: {GOAL_ROWS:,} runs with peak RSS <= {GOAL_RSS_MB:.0f} MB "
                  f"({after}): {'met' if met else 'NOT met'} (peak {peak:.0f} MB)."]  # fmt: skip
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--before", type=Path, default=None, help="another checkout to measure")
    parser.add_argument("--before-limit-mb", type=int, default=6000)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--quick", action="store_true", help="2000 runs; print, write nothing")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.output, args.before = [2000], None, None
    checkouts: list[Checkout] = [("this branch", ROOT, None)]
    if args.before is not None:
        checkouts.insert(0, (f"before ({args.before.name})", args.before.resolve(),
                             args.before_limit_mb))  # fmt: skip
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for rows in args.rows:
            source = Path(tmp) / f"runs-{rows}.csv"
            write_history(source, rows)
            mb = source.stat().st_size / 1e6
            results.append((rows, mb, measure(checkouts, source)))
            print(f"{rows} rows: done", file=sys.stderr, flush=True)
            source.unlink()
    command = command_line("bench.history_memory", quick=args.quick, before=args.before)
    labels = [c[0] for c in checkouts]
    publish(render(results, labels, command, args.before_limit_mb), args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

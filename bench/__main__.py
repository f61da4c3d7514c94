"""The benchmarks from one command (bench/README.md lists each).

    python -m bench gate [...]        the core figures against bench/baseline.json (CI runs it)
    python -m bench stale [--all]     the results files made on another core than this one
    python -m bench rerun [--jobs 2]  make the stale ones again (bench/recipes.py)
    python -m bench [--quick] [--only NAME ...]   the canonical benchmarks, each as its
                                                  results file was made

`python -m bench gate --help` says the gate's options. Without `gate`, each canonical
benchmark runs with the arguments its committed results file names on its `Command:` line,
so that `python -m bench` rewrites the very tables that are committed (one source of truth);
--quick runs their small configurations and writes nothing. history_memory and
cluster_faults always run in their quick form here: their full runs take half an hour and
compare against another checkout (`python -m bench.history_memory --before PATH`).
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
import time
from importlib import import_module
from pathlib import Path

BENCHMARKS = (
    "accuracy",
    "colocation",
    "coverage",
    "latency",
    "import_speed",
    "history_memory",
    "cluster_faults",
    "whatif",
    "coldstart",
    "real_colocation",
    "deadline",
    "memory_e2e",
    "oracle_bound",
    "deadline_cpu",
    "selection",
)
QUICK_ONLY = {"history_memory", "cluster_faults"}
RESULTS = Path(__file__).parent / "results"


def committed_arguments(name: str) -> list[str]:
    """The arguments of `python -m bench.NAME` on the `Command:` line of its results file."""
    text = (RESULTS / f"{name}.md").read_text()
    command = re.search(rf"^Command: `[^`]*python -m bench\.{name}(?P<args>[^`]*)`", text, re.M)
    if command is None:
        raise SystemExit(f"bench/results/{name}.md names no `python -m bench.{name}` command")
    return shlex.split(command["args"])


def run_all(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small, fast, writes nothing")
    parser.add_argument("--only", choices=BENCHMARKS, action="append",
                        help="run only this benchmark (repeatable)")
    args = parser.parse_args(argv)
    chosen = args.only or list(BENCHMARKS)
    for name in BENCHMARKS:
        if name not in chosen:
            continue
        quick = args.quick or name in QUICK_ONLY
        flags = ["--quick"] if quick else committed_arguments(name)
        started = time.perf_counter()
        print(f"== bench.{name} {' '.join(flags)}".rstrip(), flush=True)
        import_module(f"bench.{name}").main(flags)
        print(f"== bench.{name}: {time.perf_counter() - started:.1f} s", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["gate"]:
        from bench.gate.cli import main as gate

        return gate(argv[1:])
    if argv[:1] == ["stale"]:
        from bench.staleness import main as stale

        return stale(argv[1:])
    if argv[:1] == ["rerun"]:
        from bench.rerun import main as rerun

        return rerun(argv[1:])
    return run_all(argv)


if __name__ == "__main__":
    raise SystemExit(main())

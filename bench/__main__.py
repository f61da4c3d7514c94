"""Run every benchmark: `python -m bench [--quick]`.

--quick is the CI smoke run: small configurations that print their reports and write nothing.
Without it, each benchmark writes its results under bench/results/ (minutes on one core).
history_memory and cluster_faults always run in their quick form here: their full runs take
half an hour and compare against another checkout (`python -m bench.history_memory --before
PATH`, `python -m bench.cluster_faults --before PATH`; see their results files). The others
run with the arguments their committed results file names on its `Command:` line, so that
`python -m bench` rewrites the very tables that are committed (one source of truth).
"""

from __future__ import annotations

import argparse
import re
import shlex
import time
from pathlib import Path
from types import ModuleType

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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small, fast, writes nothing")
    parser.add_argument("--only", choices=BENCHMARKS, action="append",
                        help="run only this benchmark (repeatable)")
    args = parser.parse_args(argv)
    from bench import (
        accuracy,
        cluster_faults,
        coldstart,
        colocation,
        coverage,
        deadline,
        history_memory,
        import_speed,
        latency,
        real_colocation,
        whatif,
    )

    modules: dict[str, ModuleType] = {
        "accuracy": accuracy, "colocation": colocation,
        "coverage": coverage, "latency": latency, "import_speed": import_speed,
        "history_memory": history_memory, "cluster_faults": cluster_faults,
        "whatif": whatif, "coldstart": coldstart, "real_colocation": real_colocation,
        "deadline": deadline,
    }  # fmt: skip
    chosen = args.only or list(BENCHMARKS)
    for name in BENCHMARKS:
        if name not in chosen:
            continue
        quick = args.quick or name in QUICK_ONLY
        flags = ["--quick"] if quick else committed_arguments(name)
        started = time.perf_counter()
        print(f"== bench.{name} {' '.join(flags)}".rstrip(), flush=True)
        modules[name].main(flags)
        print(f"== bench.{name}: {time.perf_counter() - started:.1f} s", flush=True)


if __name__ == "__main__":
    main()

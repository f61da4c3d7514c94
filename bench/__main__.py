"""Run every benchmark: `python -m bench [--quick]`.

--quick is the CI smoke run: small configurations that print their reports and write nothing.
Without it, each benchmark writes its results under bench/results/ (minutes on one core).
"""

from __future__ import annotations

import argparse
import time

BENCHMARKS = ("accuracy", "sparse_limits", "colocation", "coverage", "latency", "import_speed",
              "whatif", "coldstart")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small, fast, writes nothing")
    parser.add_argument("--only", choices=BENCHMARKS, action="append",
                        help="run only this benchmark (repeatable)")
    args = parser.parse_args(argv)
    from bench import (
        accuracy,
        coldstart,
        colocation,
        coverage,
        import_speed,
        latency,
        sparse_limits,
        whatif,
    )

    chosen = args.only or list(BENCHMARKS)
    flags = ["--quick"] if args.quick else []
    for name, module in (("accuracy", accuracy), ("sparse_limits", sparse_limits),
                         ("colocation", colocation), ("coverage", coverage),
                         ("latency", latency), ("import_speed", import_speed),
                         ("whatif", whatif), ("coldstart", coldstart)):
        if name not in chosen:
            continue
        started = time.perf_counter()
        print(f"== bench.{name} {' '.join(flags)}".rstrip(), flush=True)
        module.main(flags)
        print(f"== bench.{name}: {time.perf_counter() - started:.1f} s", flush=True)


if __name__ == "__main__":
    main()

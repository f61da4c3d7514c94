"""`python -m bench gate`: compute the core figures, compare them with bench/baseline.json,
check the committed tables and the baseline's commit.

    python -m bench gate [--jobs 2] [--only SECTION ...] [--json]
    python -m bench gate --update-baseline --why "what moved and why it is right"
    python -m bench gate --tables

--update-baseline (or --update) is the one command after an intended change of the figures
(a planner, model or memory change, a merge): it recomputes every figure from the current
code, writes bench/baseline.json with the reason, and rewrites every table; commit them with
a message that contains the reason.

Exit 0: no figure worse than its tolerance, tables and baseline consistent (better figures
pass and are named). Exit 1: a figure worse, changed, new or missing, a stale table, or a
baseline whose last commit does not say why. Exit 2: the gate cannot run (bad arguments, no
Bell data under CI, an unreadable baseline).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from bench import BELL_DATA, BELL_DATA_ENV, staleness
from bench.gate import baseline as bl
from bench.gate import sections, tables
from bench.gate import units as u
from bench.gate.figures import Figure, Verdict, compare

OK, FAILED, CANNOT_RUN = 0, 1, 2
UPDATE = 'python -m bench gate --update-baseline --why "what moved and why that is right"'
# one BLAS thread per process: the figures do not depend on the machine's thread count, and
# two processes do not fight over two cores
SINGLE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line, not the usage block: what is wrong and where to read more."""
        self.exit(CANNOT_RUN, f"{self.prog}: error: {message} (see --help)\n")


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = _Parser(prog="python -m bench gate", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--jobs", type=int, default=2, help="processes (default 2: this machine's"
                   " cores)")
    p.add_argument("--only", action="append", choices=list(sections.SECTIONS),
                   help="compute only this section (repeatable)")
    p.add_argument("--update-baseline", "--update", dest="update_baseline",
                   action="store_true",
                   help="write the computed figures to bench/baseline.json, with --why, and"
                   " rewrite every table: the one command after an intended change")
    p.add_argument("--why", default="", help="why the baseline moves (goes into the file;"
                   " the commit's message must contain it)")
    p.add_argument("--tables", action="store_true",
                   help="rewrite the tables from bench/baseline.json; compute nothing")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")
    p.add_argument("--debug", action="store_true", help="tracebacks of failing units")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error("--jobs must be at least 1")
    if args.update_baseline and len(" ".join(args.why.split())) < bl.MIN_WHY:
        p.error(f"--update-baseline needs --why \"...\" (at least {bl.MIN_WHY} characters):"
                " what moved and why that is right")
    if args.why and not args.update_baseline:
        p.error("--why goes with --update-baseline")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parse(argv)
    except SystemExit as exc:
        return CANNOT_RUN if exc.code else OK
    try:
        old = bl.load()
    except bl.BaselineError as exc:
        print(f"bench gate: {exc}", file=sys.stderr)
        return CANNOT_RUN
    if args.tables:
        for path in tables.write(old.figures):
            print(f"wrote {path.relative_to(bl.ROOT)}")
        return OK
    chosen = set(args.only or sections.SECTIONS)
    skipped = set()
    if not BELL_DATA.is_dir():
        reason = (f"the Bell data is not at {BELL_DATA} (put ../shared/data/bell beside the"
                  f" checkout or set {BELL_DATA_ENV})")
        if os.environ.get("CI"):
            print(f"bench gate: {reason}: CI must compute every figure", file=sys.stderr)
            return CANNOT_RUN
        skipped = {s for s in chosen if set(u.SECTION_RUNNERS[s]) & u.NEEDS_BELL_DATA}
        print(f"bench gate: skipped {', '.join(sorted(skipped))}: {reason}", file=sys.stderr)
    if args.update_baseline and skipped:
        print("bench gate: cannot update the baseline without every section", file=sys.stderr)
        return CANNOT_RUN
    started = time.perf_counter()
    results, failures = run(u.only(u.units(), chosen - skipped), args.jobs, args.debug)
    errors = [f"error: {unit.label}: {message}" for unit, message in failures]
    failed = {unit.runner for unit, _ in failures}
    now: dict[str, Figure] = {}
    for section in sorted(chosen - skipped):
        if not failed & set(u.SECTION_RUNNERS[section]):  # else: its figures go missing
            now |= sections.figures(section, results)
    names = [n for n in set(old.figures) | set(now) if n.split(".")[0] in chosen - skipped]
    verdicts = compare(old.figures, now, names)
    elapsed = time.perf_counter() - started
    if args.update_baseline:
        if errors:
            print("\n".join(errors), file=sys.stderr)
            return FAILED
        return update(old, now, verdicts, args.why, replace_all=args.only is None)
    return report(verdicts, errors, old, elapsed, args.json)


def run(work: Sequence[u.Unit], jobs: int, debug: bool,
        ) -> tuple[dict[str, dict[tuple[str, ...], Any]], list[tuple[u.Unit, str]]]:
    """Every unit in `jobs` processes, longest first: runner -> key -> results; the units
    that failed, each with its exception in one line."""
    for var in SINGLE_THREAD:
        os.environ.setdefault(var, "1")
    results: dict[str, dict[tuple[str, ...], Any]] = {}
    failures: list[tuple[u.Unit, str]] = []
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context,
                                                initializer=_silent,
                                                initargs=(os.getpid(),)) as pool:
        futures = {pool.submit(_timed, unit): unit for unit in work}
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            unit = futures[future]
            try:
                out, cpu_s = future.result()
            except Exception as exc:  # a unit's failure is the gate's finding
                failures.append((unit, f"{type(exc).__name__}: {exc}"))
                if debug:
                    traceback.print_exception(exc)
                continue
            results.setdefault(unit.runner, {})[unit.key] = out
            print(f"gate [{done}/{len(work)}] {unit.label}: {cpu_s:.0f} s CPU", file=sys.stderr,
                  flush=True)
    return results, failures


def _silent(gate: int) -> None:
    """A worker's output goes nowhere: the benchmarks' own prints (and the history imports'
    notes) are not the gate's; a unit's failure comes back through its future. A worker
    ends with the gate (`_orphaned_exit`), whose pid it is given: a gate killed while its
    worker was still starting has already left it another parent by now."""
    _orphaned_exit(gate)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (the worker's, for its lifetime)
    sys.stderr = sys.stdout


ORPHAN_CHECK_S = 1.0


def _orphaned_exit(parent: int) -> None:
    """End this worker once its gate is gone: a killed gate (SIGKILL, or SIGTERM to its pid
    alone) left its workers computing their units for 20 minutes, beside the timings and
    recordings the machine was then quiet for."""
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(ORPHAN_CHECK_S)
        os._exit(1)

    threading.Thread(target=watch, name="orphan-watch", daemon=True).start()


def _timed(unit: u.Unit) -> tuple[Any, float]:
    started = time.process_time()
    out = unit.run()
    return out, time.process_time() - started


def update(old: bl.Baseline, now: Mapping[str, Figure], verdicts: list[Verdict], why: str,
           replace_all: bool) -> int:
    figures = dict(now) if replace_all else {**old.figures, **now}
    new = bl.updated(old, figures, verdicts, " ".join(why.split()))
    bl.save(new)
    moved = [v for v in verdicts if v.kind != "same"]
    print(f"wrote bench/baseline.json: {len(figures)} figures, {len(moved)} moved")
    for v in moved:
        print(f"  {v.line()}")
    for path in tables.write(new.figures):
        print(f"wrote {path.relative_to(bl.ROOT)}")
    print(f"commit them with a message that contains: {new.why}")
    return OK


def report(verdicts: Sequence[Verdict], errors: Sequence[str], old: bl.Baseline,
           elapsed_s: float, as_json: bool) -> int:
    stale = tables.stale(old.figures)
    problem, note = bl.provenance(old)
    older = [r.name for r in staleness.survey() if r.state == "stale"]
    failing = [v for v in verdicts if v.fails]
    better = [v for v in verdicts if v.kind == "better"]
    ok = not (failing or errors or stale or problem)
    if as_json:
        print(json.dumps({
            "ok": ok, "figures": len(verdicts), "elapsed_s": round(elapsed_s, 1),
            "failing": [_json(v) for v in failing], "better": [_json(v) for v in better],
            "errors": list(errors), "stale_tables": stale, "baseline_commit": problem,
            "note": note, "results_made_on_another_core": older}, indent=1))
        return OK if ok else FAILED
    for line in [*errors, *(v.line() for v in failing), *stale, *([problem] if problem else [])]:
        print(line)
    for v in better:
        print(v.line())
    if better:
        print(f"{len(better)} figures better than the baseline: record them with `{UPDATE}`")
    if note:
        print(f"note: {note}")
    if older:
        print(f"note: {len(older)} results files were made on another core than this one (their"
              " gate blocks are current): `python -m bench stale` names them")
    verdict = "ok" if ok else "FAILED"
    print(f"bench gate: {verdict}: {len(verdicts)} figures, {len(failing)} failing,"
          f" {len(better)} better, {len(stale)} stale tables ({elapsed_s:.0f} s)")
    if failing or stale:
        print(f"if the change is intended: `{UPDATE}` rewrites bench/baseline.json and every"
              " table from this code; commit them with a message that contains the why")
    return OK if ok else FAILED


def _json(v: Verdict) -> dict[str, Any]:
    return {"name": v.name, "kind": v.kind,
            "baseline": None if v.baseline is None else v.baseline.value,
            "now": None if v.now is None else v.now.value,
            "tolerance": (v.baseline or v.now).tolerance if (v.baseline or v.now) else None}

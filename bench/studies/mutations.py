"""Do the tests of the core notice when the code is wrong? (issue 34, item 7)

    python -m bench.studies.mutations [--only NAME ...] [--list] [--output FILE]

Each mutation replaces one exact piece of source text (it must occur once) with a plausible
mistake, runs the test files that cover that module (`pytest -q -x -n 0`, no network, the
mutated file restored afterwards whatever happens), and counts the mutant as killed when a
test fails (the same tests pass unmutated first, else nothing is counted). A mutant that
survives names a behaviour no test pins down. The list holds the three mutants issue 34
found surviving (the wait's P(meet) -> p1, PRIOR_RUNS 1 -> 10, TAIL_MARGIN 1.05 -> 1), the
others tried while writing the tests that kill them, and (30 Nov 2026) mutants of the core
decision: the planner's choice, the unreachable-target rule, the predictive distribution,
calibration's bound, the overlap prediction, the pooling of pairs and its one-fit held-out
errors, the plausibility test, the memory bound, Spark's overhead, the OOM retry and the
reading of memory failures. Five of those survived until a test pinned them: a run's spread
not shrunk in `Candidate.after_run`, which the exploration rule reads (tests/test_predictive.py
derives it from the errors themselves); pooled pairs allowed below zero
(tests/test_interference.py: 148 of 500 random pools went negative unclipped); the planner's
cost without the predicted runtime, which only `--minimize memory-mb-seconds` and the
unreachable rule read, and a 0 s success counted as a run (both tests/test_plan.py); exit
status 52 alone not read as a heap failure (tests/test_oom_retry.py).
Run it from the repository root with its virtualenv's Python (one test run per mutant, ~5-30
s each; --only to pick some).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import publish

ROOT = Path(__file__).resolve().parents[2]
HEADER = ("# Mutants of the core against their tests (issue 34, item 7)", "",
          "Command: `python -m bench.studies.mutations` (each mutant: its source change, the "
          "listed test files run with `pytest -q -x -n 0`, the file restored; the same tests "
          "pass unmutated first).", "")
SCHEDULE_TESTS = ("tests/test_schedule.py", "tests/test_wait.py")
NODETYPE_TESTS = ("tests/test_node_labels.py",)
# The core decision (issue 34, item 1): the tests that import the modules mutated.
DECISION_TESTS = ("tests/test_predictive.py", "tests/test_plan.py",
                  "tests/test_decision_robustness.py", "tests/test_calibration.py")
LOO_TESTS = ("tests/test_loo_pooling.py",)
PLAUSIBILITY_TESTS = ("tests/test_plausibility.py", "tests/test_implausible.py")
MEMORY_TESTS = ("tests/test_memory_core.py",)
CALIBRATION_TESTS = ("tests/test_calibration.py",)
OVERLAP_TESTS = ("tests/test_overlap.py",)
POOLING_TESTS = ("tests/test_interference.py", "tests/test_loo_pooling.py")
SIZING_TESTS = ("tests/test_memory_core.py", "tests/test_memory_edges.py")
PLAN_TESTS = ("tests/test_plan.py", "tests/test_plan_grid.py", "tests/test_meet_steps.py")
OOM_TESTS = ("tests/test_oom_retry.py", "tests/test_oom_hook_logs.py", "tests/test_memory_edges.py")


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # relative to the repository root
    old: str
    new: str
    tests: tuple[str, ...]


OPTIONS = "cobell_cli/core/schedule/options.py"
FACTORS = "cobell_cli/core/nodetype/factors.py"
SPEEDS = "cobell_cli/core/nodetype/speeds.py"
INFEASIBLE = "cobell_cli/core/plan/infeasible.py"
PREDICTIVE = "cobell_cli/core/predictive.py"
LOO = "cobell_cli/core/model/loo.py"
PLAUSIBILITY = "cobell_cli/core/plausibility.py"
MEMORY = "cobell_cli/core/memory/model.py"
CALIBRATION = "cobell_cli/core/calibration.py"
ALGORITHM1 = "cobell_cli/core/overlap/algorithm1.py"
POOLING = "cobell_cli/core/model/pooling.py"
SIZING = "cobell_cli/core/memory/sizing.py"
MODEL_PHASE = "cobell_cli/core/plan/model_phase.py"
PLANNER = "cobell_cli/core/plan/planner.py"
PLAN_HISTORY = "cobell_cli/core/plan/history.py"
RETRY = "cobell_cli/core/memory/retry.py"
FAILURES = "cobell_cli/core/memory/failures.py"

MUTATIONS = (
    Mutation("wait P(meet) -> p1 (issue 34)", OPTIONS,
             "p = q * p1 + (1 - q) * p2", "p = p1", SCHEDULE_TESTS),
    Mutation("wait cost -> on-time cost only", OPTIONS,
             "cost = q * on_time.cost + (1 - q) * rescued.cost", "cost = on_time.cost",
             SCHEDULE_TESTS),
    Mutation("rescue at the on-time scale-out", OPTIONS,
             "rescued = sizer.at(xs[max(i, rescue_index)], start, late)",
             "rescued = sizer.at(xs[i], start, late)", SCHEDULE_TESTS),
    Mutation("moments not merged", OPTIONS,
             "or at - out[-1].start_at < MOMENT_MERGE_S:", "or False:", SCHEDULE_TESTS),
    Mutation("moments not capped", OPTIONS,
             "if len(out) >= MAX_MOMENTS:", "if False:", SCHEDULE_TESTS),
    Mutation("a wait that leaves no time kept", OPTIONS,
             "if job.budget_s(at) < fastest:", "if False:", SCHEDULE_TESTS),
    Mutation("infeasible fallback: the slowest", OPTIONS,
             "s[1].runtime_s, -s[0]))", "-s[1].runtime_s, -s[0]))", SCHEDULE_TESTS),
    Mutation("no hopeless shortcut when alone misses", OPTIONS,
             "if bound is None or bound <= budget:", "if True:", SCHEDULE_TESTS),
    Mutation("PRIOR_RUNS 1 -> 10 (issue 34)", FACTORS,
             "PRIOR_RUNS = 1.0", "PRIOR_RUNS = 10.0", NODETYPE_TESTS),
    Mutation("PRIOR_RUNS 1 -> 0", FACTORS,
             "PRIOR_RUNS = 1.0", "PRIOR_RUNS = 0.0", NODETYPE_TESTS),
    Mutation("type factor: median of log residuals", FACTORS,
             "own = float(np.mean(values)) - base", "own = float(np.median(values)) - base",
             NODETYPE_TESTS),
    Mutation("RIDGE 0.2 -> 0", SPEEDS, "RIDGE = 0.2", "RIDGE = 0.0", NODETYPE_TESTS),
    Mutation("memory time not in 'other'", SPEEDS,
             'other = float(profile.get("memory", 0.0)) + float(profile.get("wait", 0.0))',
             'other = float(profile.get("wait", 0.0))', NODETYPE_TESTS),
    Mutation("unreachable: no one-SE tolerance", INFEASIBLE,
             "floor = top - standard_error(top, n)", "floor = top", DECISION_TESTS),
    Mutation("unreachable: the costliest within one SE", INFEASIBLE,
             "if p >= floor),\n               key=lambda j: (costs[j], j))",
             "if p >= floor),\n               key=lambda j: (-costs[j], j))", DECISION_TESTS),
    Mutation("unreachable: standard error of 100 errors more", INFEASIBLE,
             "/ (max(n, 0) + 1))", "/ (max(n, 0) + 101))", DECISION_TESTS),
    Mutation("unreachable: aim at the target, not the lowest bound", INFEASIBLE,
             "aim = max(target_s, min(dist.quantile_s(j, confidence) for j in js))",
             "aim = target_s", DECISION_TESTS),
    Mutation("unreachable: no exploration", INFEASIBLE,
             "    if not movers:\n", "    if True:\n", DECISION_TESTS),
    Mutation("predictive: no inflation for few runs near", PREDICTIVE,
             "inflate = math.sqrt(1.0 + 1.0 / (self.runs_near + 1.0))", "inflate = 1.0",
             DECISION_TESTS),
    Mutation("predictive: extrapolation ignored", PREDICTIVE,
             "return math.hypot(self.spread * inflate, self.extrapolation)",
             "return self.spread * inflate", DECISION_TESTS),
    Mutation("predictive: PRIOR_ERRORS 5 -> 0", PREDICTIVE,
             "PRIOR_ERRORS = 5.0", "PRIOR_ERRORS = 0.0", DECISION_TESTS),
    Mutation("predictive: PRIOR_ERRORS 5 -> 50", PREDICTIVE,
             "PRIOR_ERRORS = 5.0", "PRIOR_ERRORS = 50.0", DECISION_TESTS),
    Mutation("predictive: LOCAL_BANDWIDTH 0.2 -> 2", PREDICTIVE,
             "LOCAL_BANDWIDTH = 0.2", "LOCAL_BANDWIDTH = 2.0", DECISION_TESTS),
    Mutation("predictive: a run's spread not shrunk after it", PREDICTIVE,
             "spread=self.spread * math.sqrt(self.weight / (self.weight + 1))",
             "spread=self.spread", DECISION_TESTS),
    Mutation("loo: pooled pairs unpenalised", LOO,
             "penalty += [shrunk[a > 0], shrunk[b > 0]]",
             "penalty += [0 * shrunk[a > 0], 0 * shrunk[b > 0]]", LOO_TESTS),
    Mutation("plausibility: FASTER 2 -> 4", PLAUSIBILITY,
             "FASTER = 2.0", "FASTER = 4.0", PLAUSIBILITY_TESTS),
    Mutation("plausibility: SLOWER 10 -> 100", PLAUSIBILITY,
             "SLOWER = 10.0", "SLOWER = 100.0", PLAUSIBILITY_TESTS),
    Mutation("plausibility: CO_RUNNER_SLOWDOWN 3.7 -> 1", PLAUSIBILITY,
             "CO_RUNNER_SLOWDOWN = 3.7", "CO_RUNNER_SLOWDOWN = 1.0", PLAUSIBILITY_TESTS),
    Mutation("memory: TAIL_MARGIN 1.05 -> 1 (issue 34)", MEMORY,
             "TAIL_MARGIN = 1.05", "TAIL_MARGIN = 1.0", MEMORY_TESTS),
    Mutation("memory: MIN_MARGIN 1.25 -> 1", MEMORY,
             "MIN_MARGIN = 1.25", "MIN_MARGIN = 1.0", MEMORY_TESTS),
    Mutation("conformal rank rounded down", CALIBRATION,
             "rank = math.ceil((n + 1) * confidence)", "rank = math.floor((n + 1) * confidence)",
             CALIBRATION_TESTS),
    Mutation("t bound without the next run's variance", CALIBRATION,
             "t * sd * math.sqrt(1 + 1 / n)", "t * sd", CALIBRATION_TESTS),
    Mutation("CALIBRATION_RECENT_RUNS 30 -> 3", CALIBRATION,
             "CALIBRATION_RECENT_RUNS = 30", "CALIBRATION_RECENT_RUNS = 3", CALIBRATION_TESTS),
    Mutation("overlap: a job ending first overlaps until the co-runner ends", ALGORITHM1,
             "    if t2 + d < t1:\n        return float(d)",
             "    if t2 + d < t1:\n        return float(t1 - t2)", OVERLAP_TESTS),
    Mutation("overlap ratio relative to the new job, not the co-runner", ALGORITHM1,
             "return float(f(x, d / r))", "return float(f(x, d / c))", OVERLAP_TESTS),
    Mutation("pooling never (MIN_GROUPS 3 -> 100)", POOLING,
             "MIN_GROUPS = 3", "MIN_GROUPS = 100", POOLING_TESTS),
    Mutation("pooled pairs may go negative", POOLING,
             "pairs = np.maximum(pairs, 0.0)", "pairs = pairs", POOLING_TESTS),
    Mutation("pooling weight always 1", POOLING,
             "weight[i] = float(np.diag(gain)[act].mean())", "weight[i] = 1.0", POOLING_TESTS),
    Mutation("Spark's overhead floor 384 -> 0", SIZING,
             "SPARK_OVERHEAD_MIN_MB = 384", "SPARK_OVERHEAD_MIN_MB = 0", SIZING_TESTS),
    Mutation("Spark's overhead factor 0.10 -> 0.07", SIZING,
             "SPARK_OVERHEAD_FACTOR = 0.10", "SPARK_OVERHEAD_FACTOR = 0.07", SIZING_TESTS),
    Mutation("point decision: the prediction below the runs too", MODEL_PHASE,
             "u if x < lo or confidence is not None else p",
             "u if confidence is not None else p", PLAN_TESTS),
    Mutation("the largest candidate that meets, not the smallest", MODEL_PHASE,
             "i = meets.index(True)", "i = len(meets) - 1 - meets[::-1].index(True)",
             PLAN_TESTS),
    Mutation("cost without the predicted runtime", MODEL_PHASE,
             "costs = [x * p * (prices[j]", "costs = [x * (prices[j]", PLAN_TESTS),
    Mutation("no dense pass over the decision's bracket", PLANNER,
             "while len(judged) < len(candidates):", "while False:", PLAN_TESTS),
    Mutation("similar input sizes: tolerance x10", PLAN_HISTORY,
             "<= input_tolerance * input_bytes", "<= 10 * input_tolerance * input_bytes",
             PLAN_TESTS),
    Mutation("a 0 s success is usable", PLAN_HISTORY,
             "        and r > 0\n", "        and r >= 0\n", PLAN_TESTS),
    Mutation("retry above the planned heap only, not the failed one", RETRY,
             "need = max(RETRY_GROWTH * failed, failed + STEP_MB, planned_heap_mb or 0)",
             "need = max(planned_heap_mb or 0, 1)", OOM_TESTS),
    Mutation("retry one step above the failure, not RETRY_GROWTH times it", RETRY,
             "need = max(RETRY_GROWTH * failed, failed + STEP_MB, planned_heap_mb or 0)",
             "need = max(failed + STEP_MB, planned_heap_mb or 0)", OOM_TESTS),
    Mutation("retry ignores the largest grant", RETRY,
             "reservation = _largest(rules, overhead_mb) or reservation", "pass", OOM_TESTS),
    Mutation("a retry no larger than the failure still runs", RETRY,
             "if reservation.executor_memory_mb <= failed:", "if False:", OOM_TESTS),
    Mutation("an attempt with no heap set failed at 0 MB", RETRY,
             "failed = max(h or SPARK_DEFAULT_HEAP_MB for h in failed_heaps_mb)",
             "failed = max(h or 0 for h in failed_heaps_mb)", OOM_TESTS),
    Mutation("YARN's physical-memory kill not a memory failure", FAILURES,
             'return memory_failure_kind(text) in ("heap", "physical")',
             'return memory_failure_kind(text) in ("heap",)', OOM_TESTS),
    Mutation("an OOM-hook kill is memory without the executor's log", FAILURES,
             "return None if logs else f\"{reason} [executor log not read]\"",
             "return f\"{reason} [executor log not read]\"", OOM_TESTS),
    Mutation("exit 52 not a heap failure", FAILURES,
             '    "Exit status: 52",\n', "", OOM_TESTS),
)


def passes(tests: Sequence[str], python: str) -> bool:
    done = subprocess.run([python, "-m", "pytest", "-q", "-x", "-n", "0", "-p",
                           "no:cacheprovider", *tests], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    return done.returncode == 0


def run(m: Mutation, python: str) -> tuple[bool, float]:
    """(killed, seconds): the mutant applied, its tests run, the file restored."""
    path = ROOT / m.path
    source = path.read_text()
    if source.count(m.old) != 1:
        raise SystemExit(f"mutation {m.name!r}: {m.old!r} occurs {source.count(m.old)} times "
                         f"in {m.path}, not once: update the mutation to today's code")
    t0 = time.perf_counter()
    try:
        path.write_text(source.replace(m.old, m.new))
        killed = not passes(m.tests, python)
    finally:
        path.write_text(source)
    return killed, time.perf_counter() - t0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.mutations",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME",
                        help="run the mutations whose name starts so")
    parser.add_argument("--list", action="store_true", help="list the mutations and stop")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.only or m.name.startswith(tuple(args.only))]
    if args.list:
        print("\n".join(f"{m.name}: {m.path}" for m in chosen))
        return 0
    for tests in dict.fromkeys(m.tests for m in chosen):  # a mutant only counts if they pass
        if not passes(tests, sys.executable):
            raise SystemExit(f"{' '.join(tests)} fail without any mutation: fix them first")
    lines = ["| mutation | file | tests | killed | s |", "|---|---|---|---|---:|"]
    survivors = 0
    for m in chosen:
        killed, seconds = run(m, sys.executable)
        survivors += not killed
        lines.append(f"| {m.name} | {m.path} | {' '.join(m.tests)} | "
                     f"{'yes' if killed else '**no**'} | {seconds:.0f} |")
        print(lines[-1], flush=True)
    text = "\n".join([*HEADER, *lines]) + (
        f"\n\n{len(chosen) - survivors} of {len(chosen)} killed.\n")
    publish(text, args.output)
    return 1 if survivors else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Which default components of the runtime model win out of sample on the real co-located
runs (issue 34, item 3): each switched off or forced, against the default, on every real set.

    python -m bench.studies.real_ablation [--set NAME ...] [--quick] [--cache DIR]
                                          [--output FILE]

Every variant is `fit_runtime_model` (the code `cobell predict` fits) with constructor
switches of RuntimeModel, never a second implementation; every run of every set is predicted
by a model fitted on the other runs of its job (bench.real_colocation's leave-one-run-out,
every CV choice inside the fit included) at its scale-out and measured overlaps. Per set: the
mean APE, and the variant's APE minus the default's run by run, its mean and standard error
over the left-out runs (paired: the same runs, the same training sets). The rule (issue 34):
a component stays in the default only if removing it costs more than one standard error on
some set; a simpler form no worse by a standard error on every set replaces it.

`--set` runs one set (repeatable); with `--cache DIR` each set's errors are kept there, so
the sets can be run in separate commands and the table written by one more without `--set`.
Writes bench/results/real_ablation.md (nothing with --quick: 12 runs a job, or with --set).
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import publish
from bench import real_colocation as rc
from cobell_cli.core.model import fit_runtime_model

RESULTS = rc.ROOT / "bench" / "results" / "real_ablation.md"
DEFAULT = "cobell (default)"
LEVEL_LINE = {"level_line": False}  # no broken line through the levels at 3 scale-outs
UNPOOLED = {"pooling": False}  # each job's own pair (the pooled pair only for rare jobs)
SCALED = {"scaled": True}  # a + b/x always (the paper's form)
FLAT = {"scaled": False}  # a always
# name -> RuntimeModel's switches; "-" a default component off, "always" a CV choice forced
VARIANTS: dict[str, dict[str, Any]] = {
    DEFAULT: {},
    "(a) - level line at 3 scale-outs": LEVEL_LINE,
    "(b) - pooling": UNPOOLED,
    "(c) a + b/x always": SCALED,
    "(d) a always": FLAT,
    "(a)+(b)": {**LEVEL_LINE, **UNPOOLED},
    "(a)+(d)": {**LEVEL_LINE, **FLAT},
    "(b)+(d)": {**UNPOOLED, **FLAT},
    "(a)+(b)+(d)": {**LEVEL_LINE, **UNPOOLED, **FLAT},
    "(a)+(b)+(c): the paper's form, alternating fit": {**LEVEL_LINE, **UNPOOLED, **SCALED},
    "- repetition outliers": {"repetition_outliers": False},
    "- cliff detection": {"regimes": False},
    "- power-law extrapolation": {"power_law": False},
}
# what each component was chosen on (docs/model.md, bench/results/selection.md, issue 34)
PROVENANCE = {
    "(a) - level line at 3 scale-outs": (
        "chosen on profiles dev as first recorded (under load, median 30.6), motivated by "
        "diagnosing profiles test's runs; out of sample: profiles dev's quiet re-recording, "
        "profiles check, profiles fresh and the co-location sets (four scale-outs: inert "
        "there)"),
    "(b) - pooling": (
        "chosen on bench.coverage's simulated worlds, kept on bench.selection's (simulator, "
        "50 runs: +0.18 ± 0.09 without it); every real set out of sample"),
    "(c) a + b/x always": (
        "the CV between a and a + b/x: chosen on bench.selection's sets (tuning set, the "
        "simulated worlds, issue 34); out of sample: test and the profile sets"),
    "(d) a always": "as (c)",
    "- repetition outliers": "chosen on the Bell histories and the simulated worlds",
    "- cliff detection": "chosen on the Bell histories (a cliff at the smallest scale-outs)",
    "- power-law extrapolation": "chosen on the Bell histories and the simulated worlds",
}


# What the rule decided, and what was checked beyond the real sets (29 Nov 2026)
DECISIONS = """## What the rule decides

- (a) the level line at three scale-outs stays: out of sample for it, on profiles dev's quiet
  re-recording, switching it off costs more than a standard error (profiles test, development
  evidence for it, says the same); inert on the co-location sets (four scale-outs). Profiles
  check (held out for every choice) said the opposite (off: -0.53 ± 0.38), so profiles fresh
  was recorded to settle it by a rule fixed before it was recorded
  (history/record-profiles.py): there switching it off costs +0.68 ± 0.46, more than a
  standard error, so it stays (pooled over the three sets recorded after it was chosen, below,
  +0.66 ± 0.56).
- (b) pooling stays, on evidence from elsewhere: on the real sets it is within one standard
  error of no pooling on profiles dev and inert on the others (the co-location sets have two
  co-runner jobs and profiles test's jobs meet each co-runner once or twice, too few to pool:
  pooling.MIN_GROUPS, co_runner_runs.MIN_RUNS_PER_CO_RUNNER); it earns its keep in the
  simulated worlds (bench/results/selection.md).
- (c) a + b/x always is worse by more than a standard error on the test set; (d) a always is
  within one standard error on every real set, the simpler form by the rule, so it was checked
  on the allocation gate's development seed (`python -m bench gate --only allocation --json`
  with RuntimeModel's `scaled` default False instead of None, 429 s): nodesim pooled 5.77 ->
  6.41 % of runs late and 1.068 -> 1.073 x the oracle's executor-seconds, nodesim triple/kmeans
  7.7 -> 11.5 % late and 1.103 -> 1.121 x, simulator pair/sgd 1.016 -> 1.012 x, every other
  figure the same. Paired run by run (`python -m bench.studies.shape_quantile run --seed S
  --variant conformal`, today's code and a copy with that default, 312 post-bootstrap runs a
  seed in both worlds): a always minus today's, of the oracle's executor-seconds per run,
  +0.0012 +- 0.0006 on the development seed 2018 (late +0.32 +- 0.32 points), +0.0005 +- 0.0003
  held out on seeds 2019 and 2020 (624 runs, late equal at 2.08 %). It is worse by more than a
  standard error in both, so the CV between a and a + b/x stays.
- Repetition outliers: switching them off is better by more than a standard error on the
  three earlier profile sets and worse by more than one on the tuning set (out of sample for
  it too). On profiles fresh, recorded to settle it, off is within a standard error (-0.93 ±
  1.31); pooled over every real set (all recorded after they were chosen, below) off saves
  0.65 ± 0.32 points, so by the rule fixed before the recording they leave the default only
  if the gate's simulated-world figures do not fail without them. They fail (`python -m bench
  gate` with RuntimeModel's `repetition_outliers` default False, 1 Dec 2026: 46 figures worse
  than the baseline, 48 better, among the worse the Bell data's loso error 4.64 -> 5.54 %,
  nodesim pair/kmeans 0 -> 3.8 % of runs late, nodesim pooled 1.068 -> 1.073 x and
  triple/kmeans 1.103 -> 1.121 x the oracle's executor-seconds, node types 1.105 -> 1.107 x;
  among the better the profile sets' real co-location errors): they stay.
- Cliff detection and the power-law extrapolation are inert on every real set (at most four
  scale-outs, every left-out run inside the range).
- The paper's form fitted by cobell ((a)+(b)+(c)) is worse than the default on profiles dev,
  test and fresh; with the level line kept (bench.real_colocation's alternating column) it is
  no better either. No default component is the gap to the joint fit on the profile sets.
"""


def predictor(params: Mapping[str, Any]) -> rc.Predictor:
    """The left-out run's runtime by the model fitted with these switches."""
    def predict(train: rc.Runs, run: Mapping[str, Any]) -> float:
        model = fit_runtime_model(train, **params)
        return float(model.predict([run["scale_out"]], run["overlaps"])[0])
    return predict


def set_errors(set_name: str, quick: bool = False) -> dict[str, np.ndarray]:
    """APE % of every left-out run of the set, per variant, the paper's joint fit too."""
    path = rc.SETS[set_name]
    groups = [rc.load_runs(path, job) for job in rc.job_names(path)]
    if quick:
        groups = [g[:12] for g in groups]
    predictors = {name: predictor(p) for name, p in VARIANTS.items()}
    predictors[rc.JOINT] = rc.PREDICTORS[rc.JOINT]
    return rc.set_errors(groups, predictors)


def paired(errors: Mapping[str, np.ndarray], name: str) -> tuple[float, float]:
    """Mean of the variant's APE minus the default's over the set's runs, and its SE."""
    return _mean_se(errors[name] - errors[DEFAULT])


def _mean_se(diff: np.ndarray) -> tuple[float, float]:
    se = float(diff.std(ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else float("nan")
    return float(diff.mean()), se


# The sets recorded after a component was chosen, where the sets disagree on it (1 Dec 2026,
# history/record-profiles.py `fresh`): their left-out runs pooled decide within one SE
OUT_OF_SAMPLE = {
    "(a) - level line at 3 scale-outs": ("profiles dev", "profiles check", "profiles fresh"),
    "- repetition outliers": ("tuning", "test", "profiles dev", "profiles test",
                              "profiles check", "profiles fresh"),
}


def pooled(results: Mapping[str, Mapping[str, np.ndarray]], name: str,
           sets: Sequence[str]) -> tuple[float, float, int]:
    """The variant's APE minus the default's over the left-out runs of `sets` together (those
    scored): mean, standard error, runs."""
    diff = np.concatenate([results[s][name] - results[s][DEFAULT] for s in sets
                           if s in results])
    return (*_mean_se(diff), int(diff.size))


def verdict(results: Mapping[str, Mapping[str, np.ndarray]], name: str) -> str:
    """What the rule says of a variant: worse by > 1 SE somewhere (the default's component
    earns its keep; where the variant is also better by > 1 SE, that is named too: the sets
    disagree), better by > 1 SE somewhere and worse nowhere (replaces it), or no worse by an
    SE anywhere (the simpler form replaces it)."""
    diffs = {s: paired(e, name) for s, e in results.items()}
    worse = [s for s, (d, se) in diffs.items() if d > se]
    better = [s for s, (d, se) in diffs.items() if d < -se]
    if worse and better:
        return (f"default better by > 1 SE on {', '.join(worse)}; the variant by > 1 SE on "
                f"{', '.join(better)}")
    if worse:
        return f"default better by > 1 SE on {', '.join(worse)}"
    if better:
        return f"no worse anywhere, better by > 1 SE on {', '.join(better)}"
    return "within one SE on every set"


def report(results: Mapping[str, Mapping[str, np.ndarray]], command: str,
           elapsed_s: float) -> str:
    sets = list(results)
    lines = ["# The runtime model's default components on the real co-located runs", "",
             f"Command: `{command}` ({elapsed_s:.0f} s). " + _doc_paragraph(), "",
             "Mean APE % of the left-out runs; in brackets the variant minus the default, "
             "run by run (percentage points) ± its standard error over the runs. Positive: "
             "the default is better. Last row: the paper's joint fit "
             "(bench/joint_fit.py), the peer of issue 34's goal (cobell <= 0.95 x it).", "",
             "| variant | " + " | ".join(f"{s} ({len(results[s][DEFAULT])} runs)"
                                          for s in sets) + " |",
             "|---|" + "---:|" * len(sets)]
    for name in [*VARIANTS, rc.JOINT]:
        cells = []
        for s in sets:
            mean = float(results[s][name].mean())
            if name == DEFAULT:
                cells.append(f"{mean:.2f}")
                continue
            diff, se = paired(results[s], name)
            cells.append(f"{mean:.2f} ({diff:+.2f} ± {se:.2f})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "| variant | / the joint fit, per set | the rule | chosen on |",
              "|---|---|---|---|"]
    for name in list(VARIANTS)[1:]:
        ratios = ", ".join(f"{results[s][name].mean() / results[s][rc.JOINT].mean():.3f}"
                           for s in sets)
        lines.append(f"| {name} | {ratios} | {verdict(results, name)} | "
                     f"{PROVENANCE.get(name, 'the combination of its parts')} |")
    ratios = ", ".join(f"{results[s][DEFAULT].mean() / results[s][rc.JOINT].mean():.3f}"
                       for s in sets)
    lines += ["", f"The default / the joint fit, per set ({', '.join(sets)}): {ratios}."]
    for name, out_of_sample in OUT_OF_SAMPLE.items():
        scored = [s for s in out_of_sample if s in results]
        if scored:
            diff, se, n = pooled(results, name, scored)
            lines += ["", f"{name}, pooled over the sets recorded after it was chosen "
                      f"({', '.join(scored)}; {n} left-out runs): {diff:+.2f} ± {se:.2f}."]
    if set(sets) == set(rc.SETS):
        lines += ["", DECISIONS.rstrip()]
    return "\n".join(lines) + "\n"


def _doc_paragraph() -> str:
    doc = __doc__.split("\n\n")[2:3]
    return " ".join(" ".join(p.split()) for p in doc)


def _cache_file(cache: Path, set_name: str, quick: bool) -> Path:
    return cache / f"{set_name.replace(' ', '_')}{'-quick' if quick else ''}.pickle"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.real_ablation",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", choices=list(rc.SETS), default=None,
                        help="one real set (repeatable; default: all four); writes nothing")
    parser.add_argument("--quick", action="store_true", help="12 runs a job; writes nothing")
    parser.add_argument("--cache", type=Path, default=None, metavar="DIR",
                        help="keep each set's errors in DIR and reuse them")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results = {}
    for name in args.set or [s for s, p in rc.SETS.items() if p.is_file()]:
        cached = _cache_file(args.cache, name, args.quick) if args.cache else None
        if cached is not None and cached.is_file():
            results[name] = pickle.loads(cached.read_bytes())
            continue
        results[name] = set_errors(name, args.quick)
        if cached is not None:
            cached.parent.mkdir(parents=True, exist_ok=True)
            cached.write_bytes(pickle.dumps(results[name]))
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["python -m bench.studies.real_ablation", *given])
    if args.cache and not args.set:
        command += " (each set scored first by the same command with --set NAME: 13-80 s)"
    text = report(results, command, time.perf_counter() - started)
    publish(text, None if args.quick or args.set else args.output)


if __name__ == "__main__":
    main()

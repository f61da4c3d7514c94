"""Do the memory bound's held-out ratios depend on how much their fold trained on?

    python -m bench.studies.memory_fold_depth [--sets tune-quiet tune test-quiet]
        [--case-sets tune-quiet test-quiet check-quiet]

The bound (core/memory/model.py) multiplies a prediction fitted on all of a job's sizes by a
bound on held-out ratios (measured / predicted) from forward folds (select.forward_folds), each
trained on the sizes below its test run: at a job's fifth size, folds trained on two sizes and on
three. If the shallow folds under-predict far more than the deep ones, the bound carries an
error the prediction it multiplies does not have: the lever issue 36 names for the quiet sets'
largest sizes. For every case of bench.memory_accuracy (its profile history), every fold of the
model that sizes it, grouped by the sizes it trained on. check-quiet is left out on purpose: it
is the held-out set for the next candidate this points to.

The second table (added 1 Dec 2026, after every set had been scored) sorts the quiet sets' sized
cases the same way, by the input sizes the case is sized from, with cobell's default and one
candidate: `in-sample feature`, where a job's runs span too few sizes to choose its memory
function (select.select's fallback, linear in the input per executor), the one of the two
linear functions (of the input per executor, of the whole input) that fits those runs better
in relative squared error. The default's feature assumes an executor's memory follows its
share of the input; runs at two executor counts whose peaks contradict it (test-quiet's
collect: 267 MB an executor at 2 executors, 107 MB at 1, for the same input) leave it a
constant fitted to the smaller peaks.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import ROOT, publish
from bench import memory_accuracy as ma

RESULTS = ROOT / "bench" / "results" / "memory_fold_depth.md"


def case_folds(obs: Sequence[Any]) -> list[tuple[int, float]]:
    """(sizes trained on, held-out ratio) of each fold of the model sizing a case from its
    observations: the ratios model.py's bound is taken on (the default's fallback, no floor)."""
    from cobell_cli.core.memory.model import MemoryModel
    from cobell_cli.core.memory.select import candidate, fold_ratios

    return fold_ratios([o for o in obs if o.demand_mb], candidate(MemoryModel().fallback))


def case_observations(runs: Sequence[Any], case: Any) -> list[Any]:
    """What cobell reads of the runs below the case (bench.memory_accuracy's history)."""
    from cobell_cli.core.memory.demand import observations

    train = [r for r in ma.training(runs, case) if r.outcome in ("succeeded", "memory")]
    return observations(ma.history_rows(train))


def fold_ratios(set_name: str) -> dict[int, list[float]]:
    """Held-out ratio (measured demand / the fold's prediction) per sizes trained on."""
    runs, cases = ma.load(set_name)
    by_depth: dict[int, list[float]] = {}
    for case in cases:
        obs = case_observations(runs, case)
        if any(o.demand_mb for o in obs):
            for depth, ratio in case_folds(obs):
                by_depth.setdefault(depth, []).append(ratio)
    return by_depth


Depth = tuple[str, int]  # (method, input sizes the case is sized from)
CONFIDENCE = 0.95  # cobell's default memory confidence, as bench.memory_accuracy scores it


def case_depths(set_name: str) -> dict[Depth, list[Any]]:
    """bench.memory_accuracy's scores of cobell (the default, then `in-sample feature`) per
    method and input sizes the case is sized from."""
    runs, cases = ma.load(set_name)
    out: dict[Depth, list[Any]] = {}
    for method, scores in (("default", ma.score(runs, cases, CONFIDENCE)),
                           ("in-sample feature", _in_sample_scores(runs, cases))):
        for s in scores:
            if s.method == "cobell" and s.ratio is not None:
                depth = len({r.input_bytes for r in ma.training(runs, s.case)})
                out.setdefault((method, depth), []).append(s)
    return out


def _in_sample_scores(runs: Sequence[Any], cases: Sequence[Any]) -> list[Any]:
    """The scores with select.select's fallback chosen in sample (the candidate), restored
    after."""
    from cobell_cli.core.memory import model, select

    plain = select.select

    def in_sample(obs: Sequence[Any], fallback: Any, pool: Any = select.CANDIDATES,
                  memo: Any = None) -> Any:
        chosen = plain(obs, fallback, pool, memo)
        better = _better_feature(obs)
        if chosen.folds or better is None or fallback.label != "linear(per_executor)":
            return chosen
        return select.Selection(better, chosen.scores, chosen.folds)

    select.select = model.select = in_sample  # type: ignore[assignment]
    try:
        return ma.score(runs, cases, CONFIDENCE)
    finally:
        select.select = model.select = plain  # type: ignore[assignment]


def _better_feature(obs: Sequence[Any]) -> Any:
    """linear(input) where it fits `obs` better than linear(per_executor) in relative squared
    error, else None."""
    from cobell_cli.core.memory.select import candidate

    errors = []
    for label in ("linear(per_executor)", "linear(input)"):
        cand = candidate(label)
        fitted = cand.fit(obs)
        if fitted is None:
            return None
        errors.append(sum((cand.predict(fitted, o) / o.demand_mb - 1.0) ** 2 for o in obs))
    return candidate("linear(input)") if errors[1] < errors[0] - 1e-12 else None


def case_table(by_set: dict[str, dict[Depth, list[Any]]]) -> list[str]:
    lines = ["", "Sized cases by the input sizes they are sized from (bench.memory_accuracy's "
             "profile history, memory confidence 0.95): certainly too small, and the container "
             "over the smallest grant covering the need.", "",
             "| set | method | sized from sizes | cases | certainly too small | "
             "median container / need | largest |", "|---|---|---|---|---|---|---|"]
    for set_name, by_depth in by_set.items():
        for (method, depth), scores in sorted(by_depth.items()):
            ratios = [s.ratio for s in scores]
            lines.append(f"| {set_name} | {method} | {depth} | {len(scores)} | "
                         f"{sum(s.failed for s in scores)} | {statistics.median(ratios):.2f} | "
                         f"{max(ratios):.2f} |")
    return lines


def render(by_set: dict[str, dict[int, list[float]]], cases: dict[str, dict[Depth, list[Any]]],
           elapsed_s: float) -> str:
    doc = (__doc__ or "").split("\n\n")[2].replace("\n", " ").strip()
    more = (__doc__ or "").split("\n\n")[3].replace("\n", " ").strip()
    lines = ["# Held-out memory ratios by how much their fold trained on", "",
             f"Command: `python -m bench.studies.memory_fold_depth --sets {' '.join(by_set)}"
             f" --case-sets {' '.join(cases)}` "
             f"({elapsed_s:.1f} s). {doc}", "",
             "| set | sizes trained on | ratios | median | largest | share above 1.25 |",
             "|---|---|---|---|---|---|"]
    for set_name, by_depth in by_set.items():
        for depth, ratios in sorted(by_depth.items()):
            share = sum(r > 1.25 for r in ratios) / len(ratios)
            lines.append(f"| {set_name} | {depth} | {len(ratios)} | "
                         f"{statistics.median(ratios):.2f} | {max(ratios):.2f} | {share:.2f} |")
    return "\n".join([*lines, "", more, *case_table(cases)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["tune-quiet", "tune", "test-quiet"])
    parser.add_argument("--case-sets", nargs="+",
                        default=["tune-quiet", "test-quiet", "check-quiet"])
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    by_set = {name: fold_ratios(name) for name in args.sets}
    cases = {name: case_depths(name) for name in args.case_sets}
    publish(render(by_set, cases, time.perf_counter() - started) + "\n", args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

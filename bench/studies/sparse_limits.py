"""What the sparse3 protocol leaves to chance: the runtimes below the three training runs.

    python -m bench.studies.sparse_limits [--seeds N] [--quick] [--data DIR]

Below the smallest training scale-out x0, cobell's prediction has one learned input: the
elasticity p at x0 (`edge_parallel_fraction_`, the runtime's parallel share there). The three
training runs all lie at or above x0, so they say little about how the job scales below it.
This benchmark measures how much: every sparse3 draw is fitted once with the library's own
`fit_runtime_model`, then its test runs are scored with p replaced by what a rule gives.
Rules marked "tuned on the test runs" see the answers; they are bounds, not candidates: if
even they miss the goal, no rule of that family that only sees the training runs meets it.
The shrinkage family λ·p̂ + (1 - λ)·c contains every prior for p learned elsewhere, e.g.
from the other jobs of a history (c) and its weight (λ). Writes
bench/results/sparse_limits.md.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench import publish
from bench.accuracy import DEFAULT_DATA, ROOT, load
from cobell_cli.core.model.evaluate import noise_floor, splits
from cobell_cli.core.model.metrics import mape
from cobell_cli.core.model.select import RuntimeModel, fit_runtime_model

RESULTS = ROOT / "bench" / "results" / "sparse_limits.md"
P_GRID = np.linspace(0.0, 1.0, 21)
SHRINK_GRID = np.linspace(0.0, 1.0, 11)
SIGMA_GRID = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5)
PRIOR_VAR = 1.0 / 12.0
STEP_BINS = 10
GOAL = 10.0


@dataclass
class Draw:
    """One sparse3 split: the fitted model, its test runs and its MAPE for every p in P_GRID."""

    job: str
    seed: int
    model: RuntimeModel
    x: np.ndarray
    y: np.ndarray
    p_hat: float
    spread: float  # Σ (log x - mean)² over the distinct training scale-outs
    below: np.ndarray
    by_p: np.ndarray
    oracle: tuple[float, float] = (float("nan"), float("nan"))
    floor_upper: float = float("nan")  # noise floor on the runs at or above the range

    def best_p(self) -> tuple[float, float]:
        """(p, MAPE) of the best p for this draw: a fine grid, then a bounded refinement."""
        from scipy.optimize import minimize_scalar

        fine = np.linspace(0.0, 1.0, 201)
        scores = np.array([self.mape_at(p) for p in fine])
        i = int(np.argmin(scores))
        res = minimize_scalar(self.mape_at, bounds=(fine[max(i - 1, 0)], fine[min(i + 1, 200)]),
                              method="bounded", options={"xatol": 1e-6})
        return (float(res.x), float(res.fun)) if res.fun < scores[i] else (fine[i], scores[i])

    def mape_at(self, p: float) -> float:
        fitted = self.model.edge_parallel_fraction_
        self.model.edge_parallel_fraction_ = float(p)
        try:
            return mape(self.y, self.model.predict(self.x))
        finally:
            self.model.edge_parallel_fraction_ = fitted


def draws(data_dir: Path, seeds: list[int]) -> list[Draw]:
    out = []
    for f in sorted(data_dir.glob("*.csv")):
        data = load(f)
        for seed in seeds:
            for train, test in splits(data.scale_out, "sparse3", seed):
                model = fit_runtime_model(data.subset(train))
                x, y = data.scale_out[test], data.runtime_s[test]
                t = np.log(np.unique(data.scale_out[train]))
                d = Draw(f.stem, seed, model, x, y, model.edge_parallel_fraction_,
                         float(((t - t.mean()) ** 2).sum()), x < model.scale_out_range_[0],
                         np.empty(0))
                d.by_p = np.array([d.mape_at(p) for p in P_GRID])
                d.oracle = d.best_p()
                if (~d.below).any():
                    floor = noise_floor(data, test)
                    d.floor_upper = mape(y[~d.below], floor[~d.below])
                out.append(d)
    return out


def rules(ds: list[Draw]) -> dict[str, np.ndarray]:
    """Per rule, the MAPE of every draw (same order as ds)."""
    fitted = np.array([mape(d.y, d.model.predict(d.x)) for d in ds])
    by_p = np.array([d.by_p for d in ds])
    p_hat = np.array([d.p_hat for d in ds])
    fixed = by_p[:, int(np.argmin(by_p.mean(axis=0)))]
    best_shrink, best_mean = fitted, np.inf
    for lam in SHRINK_GRID:
        for c in SHRINK_GRID:
            scores = np.array([d.mape_at(lam * d.p_hat + (1 - lam) * c) for d in ds])
            if scores.mean() < best_mean:
                best_shrink, best_mean = scores, float(scores.mean())
    # A Bayesian prior N(c, 1/12) (the variance of a uniform p) against a slope measured with
    # log-runtime noise σ over the training spread: the weight of p̂ grows with the spread.
    best_bayes, best_mean = fitted, np.inf
    for sigma in SIGMA_GRID:
        for c in SHRINK_GRID:
            lam = [PRIOR_VAR / (PRIOR_VAR + sigma**2 / max(d.spread, 1e-12)) for d in ds]
            scores = np.array([d.mape_at(w * d.p_hat + (1 - w) * c)
                               for d, w in zip(ds, lam, strict=True)])
            if scores.mean() < best_mean:
                best_bayes, best_mean = scores, float(scores.mean())
    edges = np.quantile(p_hat, np.linspace(0, 1, STEP_BINS + 1))
    bins = np.clip(np.searchsorted(edges, p_hat, side="right") - 1, 0, STEP_BINS - 1)
    step = np.empty(len(ds))
    for k in range(STEP_BINS):
        members = bins == k
        if members.any():
            step[members] = by_p[members][:, int(np.argmin(by_p[members].sum(axis=0)))]
    return {
        "cobell (p fitted from the three training runs)": fitted,
        "best single p for every draw (tuned on the test runs)": fixed,
        "best shrinkage λ·p̂ + (1-λ)·c, λ and c tuned on the test runs": best_shrink,
        "best Bayesian prior N(c, 1/12) for p, run noise σ and c tuned on the test runs":
            best_bayes,
        f"best step function of p̂, {STEP_BINS} steps tuned on the test runs": step,
        "oracle: the best p for each draw (needs its test runs)":
            np.array([d.oracle[1] for d in ds]),
    }


def render(ds: list[Draw], seeds: list[int], command: str) -> str:
    table = rules(ds)
    first = np.array([d.seed == seeds[0] for d in ds])
    below_share = float(np.mean(np.concatenate([d.below for d in ds])))
    above = [mape(d.y[~d.below], d.model.predict(d.x[~d.below])) for d in ds if (~d.below).any()]
    below_part = np.array([
        100 * float(np.sum(np.abs(d.model.predict(d.x[d.below]) - d.y[d.below]) / d.y[d.below]))
        / d.y.size for d in ds])
    oracle_p = np.array([d.oracle[0] for d in ds])
    p_hat = np.array([d.p_hat for d in ds])
    corr = float(np.corrcoef(p_hat, oracle_p)[0, 1])
    # p moves only the runs below the range: a rule's mean MAPE minus the part of the runs at
    # or above it (the same for every rule) is its below-range part. What would the runs at or
    # above have to reach for the goal, given that part?
    floor = np.array([d.floor_upper for d in ds if (~d.below).any()])
    floor_first = np.array([d.seed == seeds[0] for d in ds if (~d.below).any()])
    cobell = table[next(iter(table))]
    upper_part = cobell - below_part
    share_upper = np.array([float(np.mean(~d.below)) for d in ds])
    tuned = [v for k, v in table.items() if "tuned" in k]

    def needed(rule: np.ndarray, sel: np.ndarray) -> float:
        below_mean = float(rule[sel].mean() - upper_part[sel].mean())
        return 100 * (GOAL - below_mean) / (100 * float(share_upper[sel].mean()))

    need = {name: (needed(rule, first), needed(rule, np.ones_like(first, dtype=bool)))
            for name, rule in (("cobell's rule", cobell),
                               ("the best tuned rule", min(tuned, key=np.mean)))}
    lines = [
        "# sparse3: how much of the error the training runs can explain",
        "",
        f"Command: `{command}` (data: ../shared/data/bell, {len(ds)} sparse3 draws: 6 jobs,"
        f" seeds {seeds[0]}-{seeds[-1]}, five draws each). See the module docstring for the"
        " method.",
        "",
        f"- {below_share:.0%} of the test runs lie below the smallest training scale-out; they"
        f" carry {below_part[first].mean():.1f} of cobell's {cobell[first].mean():.1f} points of"
        f" mean MAPE on seed {seeds[0]}, {below_part.mean():.1f} of {cobell.mean():.1f} over all"
        " seeds.",
        f"- On the test runs at or above the smallest training scale-out, cobell's mean MAPE is"
        f" {np.mean(above):.1f} %.",
        f"- Correlation between the fitted p̂ and the best p of each draw: {corr:.2f}.",
        *[f"- For {GOAL:g} % with {name} below the range, the runs at or above it would need a"
          f" mean MAPE of {_pct(a)} on seed {seeds[0]}, {_pct(b)} over all seeds."
          for name, (a, b) in need.items()],
        f"- The noise floor of those runs (each predicted by the mean of the other repetitions"
        f" at its scale-out: it knows each level from six runs, sparse3's models from none or"
        f" one) is {floor[floor_first].mean():.1f} % on seed {seeds[0]},"
        f" {floor.mean():.1f} % over all seeds.",
        "",
        "Mean / median MAPE % over draws, with p below the training range set by"
        f" (goal ≤ {GOAL:g}):",
        "",
        f"| rule for p | seed {seeds[0]} | seeds {seeds[0]}-{seeds[-1]} |",
        "|---|---|---|",
    ]
    for name, scores in table.items():
        lines.append(f"| {name} | {scores[first].mean():.1f} / {np.median(scores[first]):.1f}"
                     f" | {scores.mean():.1f} / {np.median(scores):.1f} |")
    return "\n".join(lines) + "\n"


def _pct(value: float) -> str:
    return f"{value:.1f} %" + ("" if value > 0 else " (impossible)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="sparse3 seeds 0..N-1 (10)")
    parser.add_argument("--quick", action="store_true", help="two seeds, writes nothing")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    seeds = list(range(2 if args.quick else args.seeds))
    if not sorted(args.data.glob("*.csv")):
        raise SystemExit(f"no CSV files in {args.data}")
    command = "python -m bench.studies.sparse_limits" + (" --quick" if args.quick else "")
    text = render(draws(args.data, seeds), seeds, command)
    publish(text, None if args.quick else args.output)
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()

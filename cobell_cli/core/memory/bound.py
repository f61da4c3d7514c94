"""The factor on a memory prediction that bounds the next need: the job's held-out ratios, with
the spread of ratios across jobs borrowed where its own are few (empirical Bayes).

A job's held-out log ratios l = log(measured / predicted) (select.nested_ratios) are modelled
as draws from N(m, σ²), and each job's (m, σ²) as a draw from one normal-inverse-χ² prior
NIX(μ0, κ0, ν0, s0²) common to the jobs (Gelman et al., Bayesian Data Analysis, 3.3): μ0 the
jobs' typical bias, s0² their typical spread, κ0 and ν0 how many ratios of a job's own that
prior is worth. With n ratios of mean l̄ and variance s², the posterior is

    κn = κ0 + n,   μn = (κ0 μ0 + n l̄) / κn,   νn = ν0 + n,
    νn σn² = ν0 s0² + (n - 1) s² + κ0 n (l̄ - μ0)² / κn,

and the next log ratio is Student t with νn degrees of freedom around μn, scale
σn √(1 + 1/κn). Its p-quantile is the bound: three wild ratios [0.42, 1.40, 1.63] no longer
make a t on 2 degrees of freedom (11.85x, bench/results/memory_e2e.md), the prior's ν0 add
their own; a job with no ratio at all gets the prior's predictive, not a fixed margin; a job
with many ratios is bounded by its own.

The prior is fitted across jobs by maximising the ratios' marginal likelihood (`fit_prior`);
DEFAULT_PRIOR is that fit on one recorded set (see its comment).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cobell_cli.core.calibration import student_t_quantile


@dataclass(frozen=True)
class RatioPrior:
    """NIX(μ0, κ0, ν0, s0²) over a job's log-ratio mean and variance."""

    mean: float  # μ0: the typical log ratio (a bias of the point prediction)
    kappa: float  # κ0: the ratios the prior mean is worth
    dof: float  # ν0: the ratios the prior spread is worth
    scale2: float  # s0²: the typical variance of a job's log ratios


# The smallest spread a prior may have: half the grant's step at its floor, log(1 + 64 / 512) / 2: a
# reservation moves in 64 MB steps from Spark's 512 MB, so a finer spread is no bound's width;
# the ratios held out at the floor are exactly 1 (select.grant_ratio), and the prior's
# likelihood would otherwise grow without end as its spread shrinks.
MIN_SPREAD = math.log(1 + 64 / 512) / 2
# Fitted by `fit_prior` on the held-out ratios of the six jobs of bench/data/memory/tune-quiet
# under demand.DEMAND (`python -m bench.memory_measure`, bench/results/memory_measure.md);
# nothing of set test-quiet was read. Most of those ratios are exactly 1 (a prediction and a
# need both at Spark's floor), so the jobs' typical spread is the smallest the grid allows,
# and their spreads differ so much that the prior is worth one ratio's (a Cauchy-like tail):
# a job with none of its own gets a factor of about 1.44 at 0.95, one with a few takes its own.
DEFAULT_PRIOR = RatioPrior(mean=0.0, kappa=16.0, dof=1.0, scale2=MIN_SPREAD**2)


@dataclass(frozen=True)
class Predictive:
    """The next log ratio's Student t: location, scale and degrees of freedom."""

    loc: float
    scale: float
    dof: float

    def quantile(self, p: float) -> float:
        return self.loc + student_t_quantile(p, self.dof) * self.scale  # type: ignore[arg-type]


def predictive(prior: RatioPrior, ratios: Sequence[float]) -> Predictive:
    """The next log ratio given the job's own held-out ratios and the prior."""
    logs = [math.log(r) for r in ratios if r > 0]
    n = len(logs)
    mean = sum(logs) / n if n else 0.0
    sq = sum((v - mean) ** 2 for v in logs)
    kappa, dof = prior.kappa + n, prior.dof + n
    loc = (prior.kappa * prior.mean + n * mean) / kappa
    spread = (prior.dof * prior.scale2 + sq
              + prior.kappa * n * (mean - prior.mean) ** 2 / kappa) / dof
    return Predictive(loc, math.sqrt(spread * (1 + 1 / kappa)), dof)


def ratio_upper(ratios: Sequence[float], confidence: float,
                prior: RatioPrior = DEFAULT_PRIOR) -> float:
    """The factor on a prediction that bounds the next need with probability `confidence`:
    the predictive's quantile, never below 1 (the point itself)."""
    return max(math.exp(predictive(prior, ratios).quantile(confidence)), 1.0)


def log_marginal(prior: RatioPrior, ratios: Sequence[float]) -> float:
    """log p(ratios' logs | prior): how well the prior explains one job's ratios."""
    logs = [math.log(r) for r in ratios if r > 0]
    n = len(logs)
    if n == 0:
        return 0.0
    mean = sum(logs) / n
    sq = sum((v - mean) ** 2 for v in logs)
    kappa, dof = prior.kappa + n, prior.dof + n
    spread = prior.dof * prior.scale2 + sq + prior.kappa * n * (mean - prior.mean) ** 2 / kappa
    return (math.lgamma(dof / 2) - math.lgamma(prior.dof / 2)
            + 0.5 * math.log(prior.kappa / kappa)
            + prior.dof / 2 * math.log(prior.dof * prior.scale2)
            - dof / 2 * math.log(spread) - n / 2 * math.log(math.pi))


# The grid `fit_prior` searches: spreads from MIN_SPREAD to 100 % (log), the mean's weight
# from 1/4 to 32 ratios, the spread's from 1 to 32 (below 1 degree of freedom a t quantile is
# unbounded, and the Cornish-Fisher expansion calibration.py computes it with fails), biases
# of -30 % to +30 %.
PRIOR_SCALES = tuple(math.exp(math.log(MIN_SPREAD) - i * math.log(MIN_SPREAD) / 40)
                     for i in range(41))
PRIOR_KAPPAS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
PRIOR_DOFS = (1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0)
PRIOR_MEANS = tuple(i / 100 for i in range(-30, 31, 2))


def fit_prior(groups: Sequence[Sequence[float]]) -> RatioPrior:
    """The prior that maximises the marginal likelihood of every job's held-out ratios (one
    group per job): the jobs' spread, borrowed by a job whose own ratios are few. At least
    two groups with two ratios each are needed to tell a spread within jobs from one
    between them (ValueError otherwise)."""
    usable = [g for g in groups if len([r for r in g if r > 0]) >= 2]
    if len(usable) < 2:
        raise ValueError("fewer than two jobs with two held-out ratios: no spread to borrow")
    best: tuple[float, RatioPrior] | None = None
    for scale in PRIOR_SCALES:
        for dof in PRIOR_DOFS:
            for kappa in PRIOR_KAPPAS:
                for mean in PRIOR_MEANS:
                    prior = RatioPrior(mean, kappa, dof, scale * scale)
                    value = sum(log_marginal(prior, g) for g in usable)
                    if best is None or value > best[0] + 1e-12:
                        best = (value, prior)
    assert best is not None
    return best[1]

"""A running co-runner's remaining work, from its driver's live progress and its own model.

A Spark driver knows only the jobs submitted so far: the completed share of their stages
overstates how far the app is whenever later jobs are still to come (an iterative job submits
one per iteration, a SQL query one per query stage). The co-runner's past runs say what a whole
run executes (`StagePlan`: how many stages, and where their event-log profiles are known, each
stage's share of the run's task time), and its runtime model how long it takes alone
(`base_runtime_s`). Together they turn the driver's counts into an estimate:

* stage work done: the expected shares of the completed stages plus, for each active stage,
  its share times its completed-task fraction (stages in the order they were submitted); with
  a stage count only, every stage weighs 1 / max(expected, known). Later, unknown stages count
  as not started. The run's fraction done follows from the stage work's own rate since the
  first job (start-up does no stage work): f_p = e / (e + (e - startup)·(1 - s)/s);
* fraction done from the model: f_m = e / base, e the elapsed time with the slow-down other
  co-runners caused so far taken out (isolated seconds);
* combined: f = w·f_p + (1 - w)·f_m, a weighted average of the two estimates of the rate at
  which the app works through its run; remaining isolated work = e·(1 - f) / f. With w = 0
  this is the model's own remaining work, base - e: Algorithm 1 as it stands.

The weight w = W_MAX · coverage, coverage the expected share of the run's work in the stages
the driver already knows. Where both estimates' errors are measured, the progress gets less
than W_MAX when it is the less reliable one: w = coverage · min(W_MAX, var_m / (var_m + var_p)),
the inverse-variance share. var_m is the model's relative error (the sd of its held-out log
ratios); var_p how far the past runs' own event-log shares stray from their mean at the point
the model expects the run to be (`StagePlan.share_spread`), relative to the work done there.
An iterative job whose runs split their work alike gets nearly W_MAX; early in a run whose
stages vary, a well-measured model keeps most of the weight. Neither weight depends on how
much the driver says is done, so more completed work never increases the remaining time for
the same elapsed time and model. W_MAX < 1 keeps the model in the estimate.

Measured in both simulated worlds and two seeds (bench/studies/progress.py, results in
bench/results/progress.md), not fitted to one: before the measured share, W_MAX 0.8 and 0.95
did about equally well and better than 0.5; letting the weight grow with the model's
fraction done (WEIGHT_POWER 1, since a rate extrapolated from little progress errs more) did
worse in both worlds, so it is 0.

Without any stage plan (no past run knows its stages) the counts are left unused: completed
stages of the jobs known so far bound nothing when later jobs may be larger, and using the
known stages as a bound measurably hurt in both worlds.

Pure: numbers in, numbers out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

W_MAX = 0.8  # the progress's largest share (module doc)
WEIGHT_POWER = 0.0  # the weight's growth with the model's fraction done: none (module doc)
ACTIVE_TASK_CREDIT = 0.5  # a running task is, on average, half done
MIN_PROFILES = 3  # past runs' profiles needed to measure how much their shares vary


@dataclass(frozen=True)
class DriverProgress:
    """What a running Spark driver says through its REST API: its jobs and stages so far.

    `stages_known` counts the stages of the submitted jobs that run (skipped ones, whose
    output an earlier job left, are not counted), `stages_complete` the completed ones, and
    `active_fractions` how far each active stage is (`stage_fraction`), in submission order.
    Task counts are kept for display.
    """

    jobs_known: int
    jobs_done: int
    stages_known: int
    stages_complete: int
    active_fractions: tuple[float, ...]
    tasks_known: int
    tasks_done: int
    first_job_at: float | None = None  # epoch s its first job was submitted: start-up ended

    def __post_init__(self) -> None:
        if min(self.jobs_known, self.jobs_done, self.stages_known, self.stages_complete,
               self.tasks_known, self.tasks_done) < 0:
            raise ValueError("driver progress counts must be >= 0")
        if self.stages_complete + len(self.active_fractions) > self.stages_known:
            raise ValueError("more completed and active stages than known ones")
        if any(not 0.0 <= f <= 1.0 for f in self.active_fractions):
            raise ValueError("active stage fractions must lie in [0, 1]")

    @property
    def stages_done(self) -> float:
        """Completed stages plus the completed share of the active ones."""
        return self.stages_complete + sum(self.active_fractions)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "stages_done": round(self.stages_done, 3)}


def stage_fraction(completed_tasks: int, active_tasks: int, total_tasks: int) -> float:
    """How far one active stage is: its completed tasks plus half of its running ones."""
    if total_tasks <= 0:
        return 0.0
    done = completed_tasks + ACTIVE_TASK_CREDIT * active_tasks
    return min(max(done / total_tasks, 0.0), 1.0)


@dataclass(frozen=True)
class StagePlan:
    """What one run of a job executes, from its past runs: a stage count, maybe shares.

    `shares[i]` is the i-th executed stage's expected share of the run's task time (sums to
    1), known where past runs have event-log profiles; None: count only (equal weights).
    """

    stages: float
    shares: tuple[float, ...] | None = None
    runs: int = 0  # how many past runs it rests on
    profiles: tuple[tuple[float, ...], ...] = ()  # the past runs' shares behind `shares`

    def to_dict(self) -> dict[str, Any]:
        return {"stages": self.stages, "shares_known": self.shares is not None,
                "runs": self.runs}

    def work_done(self, progress: DriverProgress) -> float:
        """Share of the run's stage work the driver's stages have done (module doc)."""
        n = self.shares
        total = max(self.stages, float(progress.stages_known))
        if n is None or progress.stages_known > len(n):
            return min(progress.stages_done / total, 1.0) if total > 0 else 0.0
        k = progress.stages_complete
        done = sum(n[:k]) + sum(s * f for s, f in zip(n[k:], progress.active_fractions,
                                                        strict=False))
        return min(max(done, 0.0), 1.0)

    def share_spread(self, expected: float) -> float | None:
        """How far the past runs' own shares stray where the mean shares reach `expected` of
        the stage work: the standard deviation, over the runs' profiles, of the share each
        had done at that stage and task position. None with fewer than MIN_PROFILES profiles.
        """
        if len(self.profiles) < MIN_PROFILES or self.shares is None:
            return None
        k, part = _position(self.shares, min(max(expected, 0.0), 1.0))
        done = [sum(p[:k]) + (p[k] * part if k < len(p) else 0.0) for p in self.profiles]
        mean = sum(done) / len(done)
        return math.sqrt(sum((d - mean) ** 2 for d in done) / (len(done) - 1))

    def coverage(self, progress: DriverProgress) -> float:
        """Expected share of the run's work in the stages the driver knows."""
        if self.shares is None or progress.stages_known > len(self.shares):
            return min(1.0, progress.stages_known / self.stages) if self.stages > 0 else 0.0
        return min(1.0, sum(self.shares[: progress.stages_known]))


def _position(shares: Sequence[float], expected: float) -> tuple[int, float]:
    """(stage index, completed fraction of it) where the cumulative shares reach `expected`."""
    done = 0.0
    for k, share in enumerate(shares):
        if share > 0 and done + share >= expected:
            return k, (expected - done) / share
        done += share
    return len(shares), 0.0


def stage_plan(runs: Iterable[Mapping[str, Any]]) -> StagePlan | None:
    """A job's StagePlan from its past runs (keys `stages`, `stage_shares`); None if none knows.

    The count is the median over runs that know it; shares are averaged stage by stage over
    the runs whose profile has that median count of stages, then normalised.
    """
    counts: list[float] = []
    profiles: list[Sequence[float]] = []
    for r in runs:
        shares = r.get("stage_shares")
        if _numbers(shares) and sum(shares) > 0:
            profiles.append(shares)
            counts.append(float(len(shares)))
        elif _positive(r.get("stages")):
            counts.append(float(r["stages"]))
    if not counts:
        return None
    counts.sort()
    mid = len(counts) // 2
    median = counts[mid] if len(counts) % 2 else (counts[mid - 1] + counts[mid]) / 2
    alike = [[float(v) / sum(p) for v in p] for p in profiles if len(p) == median]
    shares = None
    if alike:
        mean = [sum(col) / len(alike) for col in zip(*alike, strict=True)]
        shares = tuple(v / sum(mean) for v in mean)
    return StagePlan(stages=median, shares=shares, runs=len(counts),
                     profiles=tuple(tuple(p) for p in alike))


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _numbers(value: Any) -> bool:
    return (isinstance(value, list | tuple) and bool(value)
            and all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
                    and math.isfinite(v) for v in value))


@dataclass(frozen=True)
class RemainingWork:
    """The combined estimate for one co-runner; `remaining_s` is in isolated seconds."""

    remaining_s: float
    fraction_done: float  # the combined f
    weight: float  # the progress's share (0: the model alone)
    measured: bool = False  # the weight came from both estimates' measured errors


def remaining_work(
    progress: DriverProgress,
    elapsed_iso_s: float,
    base_runtime_s: float,
    plan: StagePlan | None,
    *,
    startup_iso_s: float | None = None,
    w_max: float | None = None,
    weight_power: float | None = None,
    model_log_sd: float | None = None,
) -> RemainingWork:
    """Isolated seconds of work the co-runner has left (module doc); never negative.

    `elapsed_iso_s` is its elapsed time in isolated seconds (> 0), `base_runtime_s` its
    model's runtime alone at its scale-out (> 0), `plan` what its past runs executed,
    `startup_iso_s` the part of the elapsed time before its first job (None: unknown),
    `model_log_sd` the relative error of `base_runtime_s` (None: unmeasured, W_MAX decides).
    `w_max` and `weight_power` default to the module's W_MAX and WEIGHT_POWER, read at the
    call (bench/studies/progress.py varies them to measure the choice).
    """
    w_max = W_MAX if w_max is None else w_max
    power = WEIGHT_POWER if weight_power is None else weight_power
    if not (elapsed_iso_s > 0 and base_runtime_s > 0):
        raise ValueError("elapsed_iso_s and base_runtime_s must be > 0")
    if not 0.0 <= w_max < 1.0:
        raise ValueError("w_max must lie in [0, 1)")
    e = elapsed_iso_s
    f_model = min(e / base_runtime_s, 1.0)
    w = 0.0
    f_progress = 0.0
    share = None
    if plan is not None and progress.stages_known > 0:
        t0 = None if startup_iso_s is None else min(max(startup_iso_s, 0.0), e)
        f_progress = _with_startup(plan.work_done(progress), e, t0)
        share = _measured_share(plan, f_model, model_log_sd, e, t0)
        cap = w_max * f_model**power
        w = plan.coverage(progress) * (cap if share is None else min(share, cap))
    f = w * f_progress + (1.0 - w) * f_model
    return RemainingWork(remaining_s=_left(e, f), fraction_done=f, weight=w,
                         measured=share is not None)


def _measured_share(plan: StagePlan, f_model: float, model_log_sd: float | None,
                    elapsed_s: float, startup_s: float | None) -> float | None:
    """The progress's share by inverse variance, where both errors are measured (module doc):
    var_m / (var_m + var_p) in relative terms. The model's fraction errs as its runtime does
    (`model_log_sd`, from its held-out errors); the progress's as the stage work done does
    between past runs, read where the model expects the run to be (so the share does not
    depend on what the driver says, and more work done never means more left), carried
    through the start-up correction by the delta method. None when either is unknown."""
    if model_log_sd is None or not 0 < f_model < 1:
        return None
    staged = _without_startup(f_model, elapsed_s, startup_s)
    spread = plan.share_spread(staged)
    if spread is None or staged <= 0:
        return None
    through_startup = 1.0 - f_model * (startup_s or 0.0) / elapsed_s
    var_m = model_log_sd**2
    var_p = (spread / staged * through_startup) ** 2
    return var_m / (var_m + var_p) if var_m + var_p > 0 else None


def _without_startup(fraction: float, elapsed_s: float, startup_s: float | None) -> float:
    """The share of stage work done when the run is `fraction` done: `_with_startup` inverted."""
    if startup_s is None:
        return fraction
    working_s = max(elapsed_s - startup_s, 0.0)
    den = elapsed_s * (1.0 - fraction) + fraction * working_s
    return fraction * working_s / den if den > 0 else 1.0


def _with_startup(staged: float, elapsed_s: float, startup_s: float | None) -> float:
    """The run's fraction done when `staged` of its stage work took elapsed - start-up seconds.

    Extrapolating the stage work's own rate leaves (elapsed - start-up)·(1 - staged)/staged
    seconds, so the fraction of the whole run is elapsed / (elapsed + that).
    """
    if startup_s is None or staged <= 0 or staged >= 1:
        return min(max(staged, 0.0), 1.0)
    working_s = max(elapsed_s - startup_s, 0.0)
    return elapsed_s * staged / (elapsed_s * staged + working_s * (1.0 - staged))


def _left(elapsed_s: float, fraction_done: float) -> float:
    """Seconds left at the rate so far: elapsed·(1 - f)/f; +inf when nothing is done yet."""
    if fraction_done <= 0:
        return math.inf
    return max(elapsed_s * (1.0 - fraction_done) / fraction_done, 0.0)


__all__ = [
    "ACTIVE_TASK_CREDIT",
    "WEIGHT_POWER",
    "W_MAX",
    "DriverProgress",
    "RemainingWork",
    "StagePlan",
    "remaining_work",
    "stage_fraction",
    "stage_plan",
]

"""The planner's records: what `plan()` returns (`Plan` and the rows it holds), the bootstrap
search's state, and the runtime-model contract planning relies on."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol

from cobell_cli.core.cost import executor_seconds
from cobell_cli.core.jsonable import jsonable

Strategy = Literal["joint", "paper", "none"]
Phase = Literal["bootstrap-search", "bootstrap-whatif", "bootstrap-parametric", "model"]
STRATEGIES: tuple[str, ...] = ("joint", "paper", "none")


class RuntimeModel(Protocol):
    """The contract of `cobell_cli.core.model.fit_runtime_model`'s result that planning relies on.

    Predictions may come back as numpy arrays or plain lists: planning only iterates them.
    `cobell_cli.core.model_table.ModelTable` (a cached model) honours the same contract.
    """

    scale_out_range_: tuple[float, float]  # smallest and largest scale-out fitted on

    def predict(self, scale_outs: Any, overlaps: Any = None) -> Iterable[float]: ...

    def predict_interval(
        self, scale_outs: Any, overlaps: Any = None, confidence: float = 0.9
    ) -> tuple[Iterable[float], Iterable[float]]: ...

    def interference(self, job: str | None) -> tuple[float, float]: ...

    def describe(self) -> dict: ...


FitFn = Callable[[Sequence[Mapping[str, Any]]], RuntimeModel]


@dataclass(frozen=True)
class CandidatePrediction:
    """One candidate scale-out; `overlap_ratio` maps co-runner app id -> predicted ratio."""

    scale_out: int
    predicted_s: float
    lower_s: float | None
    upper_s: float | None
    overlap_ratio: Mapping[str, float]
    meets_target: bool
    meet_probability: float | None = None  # estimated P(runtime <= target); None: unknown
    executor_memory_mb: int | None = None  # the heap sized for it (None: memory not sized)
    container_mb: int | None = None  # what the cluster grants per executor for it
    executor_overhead_mb: int | None = None  # what YARN adds to the heap in that container
    memory_mb_seconds: float | None = None  # container x scale-out x predicted runtime

    @property
    def executor_seconds(self) -> float:
        """What reserving it costs (core/cost.py): scale-out x prediction."""
        return executor_seconds(self.scale_out, self.predicted_s)


@dataclass(frozen=True)
class CoRunnerView:
    """A running app the plan considered, with its predicted end at the chosen scale-out."""

    app_id: str
    job: str | None
    has_history: bool  # its job's runtime model could be fitted
    source: str  # "model" | "progress" | "outlasts" | "ignored" (bootstrap, strategy none)
    started_at: float | None
    scale_out: int | None
    progress: float | None
    predicted_end_at: float | None  # None: unknown or assumed to outlast the new job
    overlap_s: float | None
    overlap_ratio: float | None
    note: str | None = None
    driver: Mapping[str, Any] | None = None  # its Spark driver's jobs and stages, if it answered
    stage_plan: Mapping[str, Any] | None = None  # what its job's past runs executed


@dataclass(frozen=True)
class SearchObservation:
    run_id: Any
    scale_out: int
    runtime_s: float
    met_target: bool


@dataclass(frozen=True)
class SearchState:
    """The bootstrap binary search after the observations, in scale-outs (bounds inclusive)."""

    lo_scale_out: int
    hi_scale_out: int
    probe_scale_out: int
    max_missed: bool  # the maximum itself was observed to miss the target
    observations: tuple[SearchObservation, ...]


@dataclass(frozen=True)
class Plan:
    """What was chosen and why; `to_dict()` is what `cobell predict --json` prints."""

    job: str
    scale_out: int
    phase: Phase
    strategy: Strategy
    reason: str
    target_s: float
    feasible: bool
    predicted_s: float | None
    lower_s: float | None
    upper_s: float | None
    interval_confidence: float | None
    confidence: float | None  # set when the upper bound, not the point prediction, decided
    meet_probability: float | None  # estimated P(runtime <= target) at scale_out; None: unknown
    now: float
    min_scale_out: int
    max_scale_out: int
    step: int
    input_bytes: int | None
    usable_runs: int
    run_number: int  # the run this plan is for, counted over usable similar runs
    warnings: tuple[str, ...] = ()
    co_runners: tuple[CoRunnerView, ...] = ()
    candidates: tuple[CandidatePrediction, ...] = ()
    search: SearchState | None = None
    model: Mapping[str, Any] | None = None
    overlap_iterations: int | None = None
    overlap_converged: bool | None = None
    calibration: Mapping[str, Any] | None = None  # the job's own prediction record, if used
    memory: Mapping[str, Any] | None = None  # executor memory at scale_out (core/memory/plan.py)
    minimize: str = "executor-seconds"  # what the smallest-reservation rule minimised

    @property
    def executor_seconds(self) -> float | None:
        """The chosen reservation's cost at its prediction; None before there is one."""
        if self.predicted_s is None:
            return None
        return executor_seconds(self.scale_out, self.predicted_s)

    @property
    def grid(self) -> dict[str, Any]:
        """Which candidates were judged: "full" (every scale-out in the range), "sparse" (past
        history.DENSE_CANDIDATES a grid far from the decision) or "none" (the binary search
        judges none); `candidates`: how many were judged, `scale_outs`: how many the range has."""
        in_range = len(range(self.min_scale_out, self.max_scale_out + 1, self.step))
        in_range += (self.max_scale_out - self.min_scale_out) % self.step != 0  # max is one too
        judged = len(self.candidates)
        kind = "none" if not judged else "sparse" if judged < in_range else "full"
        return {"kind": kind, "candidates": judged, "scale_outs": in_range}

    def to_dict(self) -> dict[str, Any]:
        out = jsonable(asdict(self))
        out["executor_seconds"] = self.executor_seconds
        out["grid"] = self.grid
        for candidate, row in zip(self.candidates, out["candidates"], strict=True):
            row["executor_seconds"] = candidate.executor_seconds
        return out


def _floats(values: Iterable[Any]) -> tuple[float, ...]:
    return tuple(float(v) for v in values)


def log_spread(plan: Plan) -> float | None:
    """A plan's width at its choice read as a log-normal's sd: log(upper / predicted) over the
    normal quantile of the level the bound is given at (how the schedule and the node labels
    read a plan); None without a bound above a positive prediction at a level in (0.5, 1)."""
    level = plan.confidence if plan.confidence is not None else plan.interval_confidence
    if (level is None or not 0.5 < level < 1 or plan.predicted_s is None
            or plan.upper_s is None or not plan.predicted_s > 0
            or not plan.upper_s > plan.predicted_s):
        return None
    from cobell_cli.core.normal import StandardNormal  # NormalDist's numbers, no statistics

    return math.log(plan.upper_s / plan.predicted_s) / StandardNormal().inv_cdf(level)

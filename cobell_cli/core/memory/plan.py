"""The memory of each candidate scale-out: the need's upper bound, the reservation that covers
it, and what that costs; chosen with the scale-out (planner.py).

Which model answers, in order: the job's own memory model (model.py) when it has runs with a
measured demand (`source` "model"); else, when runs failed for memory, RETRY_GROWTH times the
largest reservation that failed at this much input per executor (`source` "failures"); else
nothing is sized, and the user's or Spark's memory stays, said so (`source` "none"). A memory
the user set in the command, or --keep-memory, is kept (`source` "user"), with a warning when
the model finds it too small or more than twice the need. A job whose runs never gave an input
size is sized by its peaks alone (model.py `input_free_`), whatever the next run's input.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from cobell_cli.core.memory.sizing import (
    ContainerRules,
    Reservation,
    granted,
    largest_grant,
    reserve,
)

if TYPE_CHECKING:
    from cobell_cli.core.memory.model import MemoryModel

# --memory-confidence's default: the chosen heap covers the need with at least this estimated
# probability (bench/results/memory_accuracy.md).
DEFAULT_MEMORY_CONFIDENCE = 0.95
TOO_GENEROUS = 2.0  # a user's memory above this many times the need is worth a warning
# Only failures known: the next reservation is this many times the largest that failed (the
# need is above it, by how much nothing says; half as much again bounds a bisection's steps).
RETRY_GROWTH = 1.5
# Why nothing is sized, and how a job is sized without an input size
NO_MEMORY_RUN = ("no run with a measured executor memory peak or a memory failure yet; "
                 "`cobell submit` records Spark's peaks from the event log")
PEAKS_ONLY = "the job's runs have no input size: sized from its peaks alone"


@dataclass(frozen=True)
class MemoryRequest:
    """What planning knows of memory beyond the job's runs."""

    rules: ContainerRules
    confidence: float = DEFAULT_MEMORY_CONFIDENCE
    user_memory_mb: int | None = None  # the command's own --executor-memory (kept)
    user_overhead_mb: int | None = None
    input_bytes: int | None = None  # the next run's input; None: the largest seen
    keep: bool = False  # leave the memory as the command or Spark's defaults have it
    confidence_asked: bool = False  # --memory-confidence given: say when it cannot act


@dataclass(frozen=True)
class CandidateMemory:
    """One candidate scale-out's memory: the need's point and upper bound, the reservation."""

    scale_out: int
    predicted_peak_mb: float | None
    upper_peak_mb: float | None
    executor_memory_mb: int | None
    executor_overhead_mb: int | None  # what YARN adds to the heap (None elsewhere)
    container_mb: int | None
    fits: bool = True
    rounding_mb: int | None = None  # the scheduler's step above heap + overhead (YARN)


@dataclass(frozen=True)
class MemoryPlan:
    """The memory side of a plan; `at(x)` is one candidate's."""

    source: str  # "model" | "failures" | "user" | "none"
    model: str | None  # the memory function, e.g. "linear(per_executor)"
    runs: int  # runs with a measured demand it rests on
    confidence: float
    input_bytes: int | None
    input_note: str | None
    candidates: tuple[CandidateMemory, ...]
    confidence_note: str | None = None  # why a --memory-confidence given cannot act; None: it acts
    description: Mapping[str, Any] | None = None

    @property
    def warnings(self) -> tuple[str, ...]:
        return () if self.confidence_note is None else (self.confidence_note,)

    def at(self, scale_out: int) -> CandidateMemory | None:
        return self._by_scale_out.get(scale_out)

    @cached_property
    def _by_scale_out(self) -> dict[int, CandidateMemory]:
        """The candidates by scale-out: the planner asks `at` once per candidate, and a scan
        each time made `--max-scale-out 100000` quadratic (issue 35, bug 4)."""
        return {c.scale_out: c for c in reversed(self.candidates)}  # the first wins

    def to_dict(self, scale_out: int) -> dict[str, Any]:
        """predict --json's `memory` object at the chosen scale-out."""
        chosen = self.at(scale_out)
        out = {
            "source": self.source,
            "model": self.model,
            "runs": self.runs,
            "memory_confidence": self.confidence,
            "input_bytes": self.input_bytes,
            "chosen_by": (self.description or {}).get("chosen_by"),
            "held_out_ratios": (self.description or {}).get("held_out_ratios"),
        }
        if chosen is not None:
            out.update(asdict(chosen))
        if self.input_note:
            out["note"] = self.input_note
        if self.confidence_note:  # --strict reads this, not the warnings' text
            out["confidence_cannot_act"] = self.confidence_note
        return out


def plan_memory(
    runs: Sequence[Mapping[str, Any]],
    candidates: Sequence[int],
    request: MemoryRequest,
    model: MemoryModel | None = None,
) -> MemoryPlan:
    """Each candidate's memory. `runs`: the job's runs with memory columns (any status);
    `model`: an already fitted model of them (a cache's), else fitted here."""
    if not runs and model is None:  # most jobs on most clusters: nothing to import or fit
        return _unsized(candidates, request, request.input_bytes, None)
    from cobell_cli.core.memory.demand import observations
    from cobell_cli.core.memory.model import MemoryModel

    obs = observations(runs)
    if model is None and any(o.demand_mb for o in obs):
        model = MemoryModel(bound_folds=bound_folds(request)).fit(obs)
    if model is not None and model.input_free_:
        input_bytes, note = request.input_bytes, PEAKS_ONLY + (
            " (--input-size not used for memory)" if request.input_bytes else "")
    else:
        input_bytes, note = _input(request.input_bytes, obs)
    if model is None and any(o.failed for o in obs):
        return _after_failures(obs, candidates, request, input_bytes or 0, note)
    if model is None:
        return _unsized(candidates, request, input_bytes, None)
    rows = tuple(_candidate(model, x, input_bytes or 0, request) for x in candidates)
    return MemoryPlan(
        confidence_note=confidence_note(request, model),
        source="user" if request.keep else "model",
        model=model.candidate_.label,
        runs=model.runs_,
        confidence=request.confidence,
        input_bytes=input_bytes,
        input_note=note,
        candidates=rows,
        description=model.describe(),
    )


# The most runs a --memory-confidence holds out: enough for P 0.99 to act (99 ratios), and a
# fit of a few hundred runs' folds well under a second.
MAX_BOUND_FOLDS = 99


def bound_folds(request: MemoryRequest | None) -> int:
    """How many runs (those of the largest inputs) the bound holds out. Without
    --memory-confidence: select.MAX_FOLDS, the default rule (the largest of their ratios x
    TAIL_MARGIN; docs/memory.md measures it). With it, the level is taken at its word: as
    many as it needs to act (n / (n + 1) >= P: 19 at 0.95, 99 at 0.99), at most
    MAX_BOUND_FOLDS; a shorter history holds out what it has, and the note says so. No
    request (`model show`): the default."""
    from cobell_cli.core.memory.select import MAX_FOLDS

    if request is None or not request.confidence_asked:
        return MAX_FOLDS
    needed = math.ceil(request.confidence / (1.0 - request.confidence) - 1e-9)
    return min(MAX_BOUND_FOLDS, max(MAX_FOLDS, needed))


def bound_summary(model: MemoryModel) -> dict[str, Any]:
    """What `model show` says of the bound: its factor on the prediction at the default level,
    the held-out ratios it rests on, and the largest --memory-confidence that can act on this
    history (None: fewer than MIN_RATIOS runs to hold out, so no level acts)."""
    from cobell_cli.core.memory.model import MIN_RATIOS

    holdable = min(model.holdable_runs_, MAX_BOUND_FOLDS)
    return {
        "factor": round(model.ratio(DEFAULT_MEMORY_CONFIDENCE), 3),
        "confidence": DEFAULT_MEMORY_CONFIDENCE,
        "held_out_ratios": len(model.bound_ratios_),
        "largest_confidence_that_acts": (
            float(_ceiling(holdable)) if holdable >= MIN_RATIOS else None),
    }


def _input(given: int | None, obs: Sequence[Any]) -> tuple[int | None, str | None]:
    """The input the memory is sized for: the given one, else the largest the runs had."""
    if given is not None:
        return given, None
    sizes = [o.input_bytes for o in obs if o.input_bytes]
    if not sizes:
        return None, None
    return max(sizes), "no --input-size: sized for the largest input seen"


def _candidate(
    model: MemoryModel, scale_out: int, input_bytes: int, request: MemoryRequest
) -> CandidateMemory:
    est = model.estimate(input_bytes, scale_out, request.confidence)
    return _sized(scale_out, est.predicted_mb, est.upper_mb, request)


def _sized(
    scale_out: int, predicted_mb: float, upper_mb: float, request: MemoryRequest
) -> CandidateMemory:
    """The candidate's reservation: the one covering `upper_mb` (at most the largest the
    cluster grants: more is refused outright), or the user's when kept."""
    reservation: Reservation | None = reserve(upper_mb, request.rules)
    if not reservation.fits:
        reservation = largest_grant(request.rules) or reservation
    if request.keep:
        reservation = _users(request)
    return _row(scale_out, reservation, request.rules, round(predicted_mb, 1),
                round(upper_mb, 1))


def _users(request: MemoryRequest) -> Reservation | None:
    """The grant of the memory the command sets (None: it sets none)."""
    user = request.user_memory_mb
    return granted(user, request.rules, request.user_overhead_mb) if user is not None else None


def _row(scale_out: int, reservation: Reservation | None, rules: ContainerRules,
         predicted_mb: float | None = None, upper_mb: float | None = None) -> CandidateMemory:
    """One candidate's memory: the need and the reservation's terms (heap + overhead +
    rounding = container on YARN; the heap alone elsewhere)."""
    yarn = reservation is not None and rules.yarn
    return CandidateMemory(
        scale_out=scale_out,
        predicted_peak_mb=predicted_mb,
        upper_peak_mb=upper_mb,
        executor_memory_mb=reservation.executor_memory_mb if reservation else None,
        executor_overhead_mb=reservation.executor_overhead_mb if yarn else None,
        container_mb=reservation.container_mb if reservation else None,
        fits=reservation.fits if reservation else True,
        rounding_mb=reservation.rounding_mb if yarn else None,
    )


def _after_failures(
    obs: Sequence[Any],
    candidates: Sequence[int],
    request: MemoryRequest,
    input_bytes: int,
    note: str | None,
) -> MemoryPlan:
    """Only memory failures known: RETRY_GROWTH x the largest that failed with this much
    input per executor; unsized where none did."""
    from cobell_cli.core.memory.model import failure_bound

    rows = []
    for x in candidates:
        failed = failure_bound(obs, input_bytes, x)
        if failed is None:
            rows.append(_row(x, _users(request), request.rules))
        else:
            rows.append(_sized(x, failed, RETRY_GROWTH * failed, request))
    return MemoryPlan(
        source="user" if request.keep else "failures",
        model=None,
        runs=0,
        confidence=request.confidence,
        input_bytes=input_bytes,
        input_note=note or f"only memory failures known: {RETRY_GROWTH:g}x the largest that failed",
        candidates=tuple(rows),
        confidence_note=confidence_note(request, None, "failures"),
    )


def _unsized(
    candidates: Sequence[int], request: MemoryRequest, input_bytes: int | None, note: str | None
) -> MemoryPlan:
    """No model: the user's memory if given (its container still priced), else nothing."""
    reservation = _users(request)
    rows = tuple(_row(x, reservation, request.rules) for x in candidates)
    why = note or NO_MEMORY_RUN
    source = "user" if reservation is not None else "none"
    return MemoryPlan(
        confidence_note=confidence_note(request, None, source),
        source=source,
        model=None,
        runs=0,
        confidence=request.confidence,
        input_bytes=input_bytes,
        input_note=why,
        candidates=rows,
    )


CONFIDENCE_OPTION = "--memory-confidence"


def confidence_note(request: MemoryRequest, model: MemoryModel | None,
                    source: str = "model") -> str | None:
    """Why a --memory-confidence given cannot act on this plan, naming the largest level the
    job's history supports and what would raise it (a plan warning; --strict's usage error);
    None when it acts, was not given, or the user's own memory is kept (the confidence only
    judges it then)."""
    if not request.confidence_asked or request.keep or source == "user":
        return None
    why = _why_confidence_cannot_act(request.confidence, model, source)
    return None if why is None else f"{CONFIDENCE_OPTION} {request.confidence:g} cannot act: {why}"


def _why_confidence_cannot_act(confidence: float, model: MemoryModel | None,
                               source: str) -> str | None:
    from cobell_cli.core.memory.model import (
        MIN_MARGIN,
        MIN_RATIOS,
        TAIL_MARGIN,
        confidence_acts,
    )

    if model is None:
        return (f"the heap is {RETRY_GROWTH:g}x the largest that failed for memory at any "
                "level; a run that succeeds with a measured peak lets it act"
                if source == "failures" else "nothing is sized (" + NO_MEMORY_RUN + ")")
    if model.prior is not None:
        return None
    n = len(model.bound_ratios_)
    if n < MIN_RATIOS:
        return (f"the bound rests on {n} held-out ratio{'s' if n != 1 else ''}, fewer than "
                f"{MIN_RATIOS}, so it is at least {MIN_MARGIN:g}x the prediction at any level; "
                f"more runs at larger inputs raise what it supports (P {_ceiling(MIN_RATIOS)} "
                f"at {MIN_RATIOS} ratios)")
    if confidence_acts(n, confidence):
        return None
    folds = model.bound_folds
    more = (f"more runs at larger inputs raise it (one held-out ratio each, up to {folds}: "
            f"P {_ceiling(folds)})" if len(model.ratios_) < folds else
            f"cobell holds out at most {folds} runs (those of the largest inputs), so no "
            "longer history raises it")
    return (f"the job's {n} held-out ratios support at most P {_ceiling(n)} (above it the "
            f"bound is their largest x {TAIL_MARGIN:g} at any level); {more}")


def _ceiling(n_ratios: int) -> str:
    """n / (n + 1), the largest confidence n held-out ratios support, rounded down: a level
    as printed still acts."""
    return f"{math.floor(1000 * n_ratios / (n_ratios + 1)) / 1000:g}"


def user_memory_warnings(plan: MemoryPlan, scale_out: int) -> list[str]:
    """What the model says of a memory the user set: too small, or far more than needed."""
    chosen = plan.at(scale_out)
    if plan.source != "user" or chosen is None or chosen.upper_peak_mb is None:
        return []
    given = chosen.executor_memory_mb or 0
    if given < chosen.upper_peak_mb:
        return [
            f"your executor memory {given} MB is below the {chosen.upper_peak_mb:.0f} MB the "
            f"memory model bounds the need at (P >= {plan.confidence:g}); the run may fail for "
            "memory (drop --executor-memory to let cobell size it)"
        ]
    if chosen.predicted_peak_mb and given > TOO_GENEROUS * chosen.predicted_peak_mb:
        return [
            f"your executor memory {given} MB is more than {TOO_GENEROUS:g}x the "
            f"{chosen.predicted_peak_mb:.0f} MB the job is predicted to need; drop "
            "--executor-memory to let cobell size it"
        ]
    return []

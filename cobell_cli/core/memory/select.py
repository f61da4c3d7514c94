"""Which memory function fits a job: forward cross-validation in input size, nested.

Memory must extrapolate (tonight's input is often the largest yet), so a candidate (an
expert on one feature: the input per executor or the whole input) is judged the way it will
be used: each run predicted by the candidate fitted on the runs with a smaller input only.
Among the candidates, the simplest whose error is within one standard error of the best
(fewer parameters first, the paper's forms before the others; ../shared/CONVENTIONS.md
"Models"): five experts on a handful of runs is exactly where picking the smallest CV error
overfits. The error of the whole procedure, selection included, is measured one level out
(nested): each run predicted by the candidate that the selection picks on the smaller runs
alone. Those held-out ratios are what the upper bound is calibrated on (model.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cobell_cli.core.memory.experts import EXPERTS, Expert, Fitted
from cobell_cli.core.memory.records import FEATURES, Feature, MemoryObservation, feature_value

MIN_SIZES = 2  # distinct input sizes a fold trains on (a 2-parameter form needs them)
# Folds judged: those of the largest inputs (the extrapolations most like the next run's),
# which bounds the nested selection's cost on a long history.
MAX_FOLDS = 6


@dataclass(frozen=True)
class Candidate:
    """An expert on a feature; `constant` ignores the feature."""

    expert: Expert
    feature: Feature

    @property
    def label(self) -> str:
        if self.expert.name == "constant":
            return "constant"
        return f"{self.expert.name}({self.feature})"

    def fit(self, runs: Sequence[MemoryObservation]) -> Fitted | None:
        z = [feature_value(r, self.feature) for r in runs]
        return self.expert.fit(z, [r.demand_mb for r in runs])  # type: ignore[misc]

    def predict(self, fitted: Fitted, run: MemoryObservation) -> float:
        return fitted.predict(feature_value(run, self.feature))


def candidates() -> tuple[Candidate, ...]:
    """In the order the one-standard-error rule walks: simplest first."""
    out = [Candidate(EXPERTS[0], FEATURES[0])]
    for exp in EXPERTS[1:]:
        out += [Candidate(exp, f) for f in FEATURES]
    return tuple(out)


CANDIDATES = candidates()


def candidate(label: str) -> Candidate:
    return next(c for c in CANDIDATES if c.label == label)


def forward_folds(
    runs: Sequence[MemoryObservation], max_folds: int = MAX_FOLDS,
) -> list[tuple[list[MemoryObservation], MemoryObservation]]:
    """(train, test) per run: trained on the runs with a strictly smaller input, where those
    cover at least MIN_SIZES distinct input sizes; the `max_folds` of the largest inputs."""
    folds = []
    for test in sorted(runs, key=lambda r: r.input_bytes)[::-1]:
        train = [r for r in runs if r.input_bytes < test.input_bytes]
        if len({r.input_bytes for r in train}) >= MIN_SIZES:
            folds.append((train, test))
        if len(folds) == max_folds:
            break
    return folds


def holdable_runs(runs: Sequence[MemoryObservation]) -> int:
    """How many runs forward_folds could hold out with no cap (those with at least MIN_SIZES
    distinct smaller inputs), counted without building their folds."""
    sizes = sorted({r.input_bytes for r in runs})
    if len(sizes) <= MIN_SIZES:
        return 0
    return sum(r.input_bytes >= sizes[MIN_SIZES] for r in runs)


# A forward fold is fixed by its test run (it trains on every run with a smaller input), so
# its error under a candidate is the same wherever the fold appears: the nested procedure
# meets each fold in many outer folds, and a memo keyed by (candidate, test run) fits it once.
FoldMemo = dict[tuple[str, int], float | None]


def log_errors(
    cand: Candidate, folds: Sequence[tuple[list[MemoryObservation], MemoryObservation]],
    memo: FoldMemo | None = None,
) -> list[float] | None:
    """log(predicted / measured) per fold; None when the candidate cannot fit some fold.
    `memo`: errors already computed, by (candidate, id of the test run)."""
    memo = {} if memo is None else memo
    errors = []
    for train, test in folds:
        key = (cand.label, id(test))
        if key not in memo:
            memo[key] = _log_error(cand, train, test)
        error = memo[key]
        if error is None:
            return None
        errors.append(error)
    return errors


def _log_error(cand: Candidate, train: Sequence[MemoryObservation],
               test: MemoryObservation) -> float | None:
    fitted = cand.fit(train)
    if fitted is None:
        return None
    predicted = cand.predict(fitted, test)
    if predicted <= 0:
        return None
    return math.log(predicted / test.demand_mb)  # type: ignore[operator]


@dataclass(frozen=True)
class Selection:
    """The candidate chosen and the CV errors it was chosen on (mean squared log error)."""

    candidate: Candidate
    scores: dict[str, float]  # label -> mean squared log error
    folds: int


def select(
    runs: Sequence[MemoryObservation], fallback: Candidate, pool: Sequence[Candidate] = CANDIDATES,
    memo: FoldMemo | None = None,
) -> Selection:
    """The one-standard-error choice among `pool` by forward CV; `fallback` when the runs
    leave no fold to judge on (fewer than MIN_SIZES + 1 distinct sizes). `memo`: fold errors
    shared with other selections on subsets of the same runs (log_errors)."""
    folds = forward_folds(runs)
    if not folds:
        return Selection(fallback, {}, 0)
    scored: list[tuple[Candidate, float, float]] = []
    for cand in pool:
        errors = log_errors(cand, folds, memo)
        if errors is None:
            continue
        squares = [e * e for e in errors]
        mean = sum(squares) / len(squares)
        sd = math.sqrt(sum((s - mean) ** 2 for s in squares) / max(len(squares) - 1, 1))
        scored.append((cand, mean, sd / math.sqrt(len(squares))))
    if not scored:
        return Selection(fallback, {}, len(folds))
    _, best, best_se = min(scored, key=lambda t: t[1])
    chosen = next(c for c, mean, _ in scored if mean <= best + best_se)
    return Selection(chosen, {c.label: mean for c, mean, _ in scored}, len(folds))


# No executor is granted less heap than Spark's smallest (sizing.SPARK_MIN_HEAP_MB): a
# prediction and a demand both below it are the same reservation, whatever their ratio.
FLOOR_MB = 512.0


def grant_ratio(measured_mb: float, predicted_mb: float, floor_mb: float = FLOOR_MB) -> float:
    """measured / predicted on the scale of what is reserved: both at least the floor (a
    demand of 150 MB predicted at 300 MB is no error: both get 512 MB)."""
    return max(measured_mb, floor_mb) / max(predicted_mb, floor_mb)


def nested_ratios(
    runs: Sequence[MemoryObservation], fallback: Candidate, pool: Sequence[Candidate] = CANDIDATES,
    floor_mb: float = 0.0, deep_only: bool = False, max_folds: int = MAX_FOLDS,
) -> list[float]:
    """measured / predicted for each run the selection procedure can be judged on: the run
    predicted by the candidate `select` picks on the runs with a smaller input, fitted there;
    `floor_mb` FLOOR_MB: on the reserved scale (grant_ratio, what bound.py's prior is fitted
    on), 0 (the default): as they are. `deep_only` (a candidate): without the folds trained on
    only MIN_SIZES sizes where a deeper one exists -- they err as a prediction trained on more
    sizes does not (bench/results/memory_fold_depth.md). `max_folds`: how many runs (those of
    the largest inputs) are held out; the selection inside each fold keeps MAX_FOLDS."""
    folds = fold_ratios(runs, fallback, pool, floor_mb, max_folds)
    if deep_only and any(depth > MIN_SIZES for depth, _ in folds):
        folds = [(depth, ratio) for depth, ratio in folds if depth > MIN_SIZES]
    return [ratio for _, ratio in folds]


def fold_ratios(
    runs: Sequence[MemoryObservation], fallback: Candidate, pool: Sequence[Candidate] = CANDIDATES,
    floor_mb: float = 0.0, max_folds: int = MAX_FOLDS,
) -> list[tuple[int, float]]:
    """(distinct sizes the fold trained on, its held-out ratio) per forward fold: the ratios
    of nested_ratios with how much each fold knew."""
    folds = []
    memo: FoldMemo = {}  # the outer folds' selections share their inner folds
    for train, test in forward_folds(runs, max_folds):
        predicted = held_out_prediction(train, test, fallback, pool, memo)
        if predicted is not None:
            folds.append((len({r.input_bytes for r in train}),
                          grant_ratio(test.demand_mb, predicted,  # type: ignore[arg-type]
                                      floor_mb)))
    return folds


def held_out_prediction(
    train: Sequence[MemoryObservation], test: MemoryObservation, fallback: Candidate,
    pool: Sequence[Candidate] = CANDIDATES, memo: FoldMemo | None = None,
) -> float | None:
    """The need of `test` as the selection procedure predicts it from `train` alone (the
    candidate `select` picks there, fitted there); None where nothing fits or it is not
    positive."""
    chosen = select(train, fallback, pool, memo).candidate
    fitted = chosen.fit(train)
    if fitted is None:
        chosen, fitted = fallback, fallback.fit(train)
    if fitted is None:
        return None
    predicted = chosen.predict(fitted, test)
    return predicted if predicted > 0 else None

"""`WhatIfModel`: a job's runtime at other scale-outs from its profiles' replays, corrected by
log(runtime / replay) = c0 + c1·log N where its runs say more (chosen by leave-one-out CV)."""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from cobell_cli.core.normal import StandardNormal
from cobell_cli.core.profile import AppProfile
from cobell_cli.core.whatif.evidence import HOST_SHARE_OFFSET, choose_startup
from cobell_cli.core.whatif.replay import replay_key, replay_s
from cobell_cli.core.whatif.workload import Workload, workload_or_none

CORRECTIONS = ("none", "constant", "log-linear")
EXACT_UP_TO = 32  # executors replayed one by one; beyond, a geometric grid
GRID_STEP = 1.15
# The sd of a single-run what-if's log error at the observed scale-out, and its growth per
# unit of |log(N / N_observed)|: the interval before the job's own runs say more. Fitted by
# bench/whatif.py on all pairs of the tuning set (bench/data/whatif: least squares of the
# empty-history what-if's |log error| on the distance, scaled so that its 90 % interval
# covers 90 % of the pairs; the errors' tails are heavier than a normal's). Re-measured on
# the fresh test set in bench/results/whatif.md.
LOG_ERROR_AT_OBSERVED = 0.169
LOG_ERROR_PER_LOG_SCALE_OUT = 0.085


def _scale_outs(scale_outs: Any) -> list[int]:
    xs = [scale_outs] if isinstance(scale_outs, int | float) else list(scale_outs)
    out = []
    for x in xs:
        if not (isinstance(x, int | float) and math.isfinite(x) and x >= 1):
            raise ValueError("scale-outs must be numbers >= 1")
        out.append(max(1, round(float(x))))
    return out


class WhatIfModel:
    """Predicts a job's runtime at a scale-out by replaying its runs' profiles.

    `fit(profiles, runs)`: profiles of the job's runs (newest first), the job's succeeded
    runs (mappings with scale_out and runtime_s), and optionally profiles of other jobs on
    the cluster for the start-up slopes. Follows the estimator contract of
    `cobell_cli.core.model` (learned values end in _), and planning's RuntimeModel protocol
    (`predict`, `predict_interval`, `interference`, `describe`, `scale_out_range_`).

    `memory`, like scikit-learn's: a mapping the replays are kept in across fits (and, when
    the caller stores it, across processes), `cache_key()` -> {executors: replayed seconds}.
    A fit of the same workloads and start-up then replays nothing it replayed before.
    """

    def __init__(
        self,
        *,
        correction: str = "auto",
        max_profiles: int = 3,
        memory: MutableMapping[str, dict[int, float]] | None = None,
        host_offset: float | None = HOST_SHARE_OFFSET,
    ) -> None:
        self.correction = correction  # "auto" (LOO CV) or one of CORRECTIONS
        self.max_profiles = max_profiles
        self.memory = memory
        # the start-up prior's executors-per-host offset (evidence.py); None: as observed
        self.host_offset = host_offset

    def fit(
        self,
        profiles: Sequence[AppProfile],
        runs: Sequence[Mapping[str, Any]] = (),
        cluster_profiles: Sequence[AppProfile] = (),
    ) -> WhatIfModel:
        own: list[Workload | None] = []  # the first profiles', up to max_profiles usable
        for p in profiles:
            own.append(workload_or_none(p))
            if sum(w is not None for w in own) == self.max_profiles:
                break
        usable = [w for w in own if w is not None]
        if not usable:
            raise ValueError("no profile with tasks and an end to replay")
        self.workloads_ = usable
        observed = [(float(w.scale_out), w.runtime_s) for w in usable]
        points = _points(runs)
        self.startup_choice_ = choose_startup(profiles, own, points, cluster_profiles,
                                              self.host_offset, self.memory)
        self.startup_ = self.startup_choice_.startup
        self._key = replay_key(usable, self.startup_)
        self._anchors_s: list[float] | None = None
        self._cache: dict[int, float] = (
            {} if self.memory is None else self.memory.setdefault(self._key, {})
        )
        self._observed = observed
        return self._fit_runs(points or observed)

    def refit(self, runs: Sequence[Mapping[str, Any]]) -> WhatIfModel:
        """The same replays (workloads, start-up, cache) with the correction chosen on other
        runs: the job's runs with each one's co-runner slow-down divided out, so that the
        interference term multiplies the curve as it does any curve (plan/curve_effects.py)."""
        twin = copy.copy(self)
        return twin._fit_runs(_points(runs) or self._observed)

    def _fit_runs(self, points: list[tuple[float, float]]) -> WhatIfModel:
        self.points_ = points
        xs = [x for x, _ in self.points_] + [x for x, _ in self._observed]
        self.scale_out_range_ = (min(xs), max(xs))
        self.correction_, self.theta_, self.cv_ = self._choose_correction(self.points_)
        self.correction_range_ = _log_range(self._log_ratios(self.points_))
        self.residual_sd_ = self._residual_sd(self.points_)
        self.loo_ratios_ = self._loo_ratios(self.points_)
        return self

    # -- replay, cached per scale-out
    def replay(self, executors: int) -> float:
        """The geometric mean of the profiles' replays (`_replay_exact`).

        Exact up to EXACT_UP_TO executors and at the observed counts; beyond, on a
        geometric grid (GRID_STEP apart) interpolated in log-log, so tabulating hundreds of
        scale-outs costs tens of replays.
        """
        x = int(executors)
        if x <= EXACT_UP_TO or any(x == w.scale_out for w in self.workloads_):
            return self._replay_exact(x)
        lo = EXACT_UP_TO
        while (hi := max(lo + 1, round(lo * GRID_STEP))) < x:
            lo = hi
        if hi == x:
            return self._replay_exact(x)
        y0, y1 = self._replay_exact(lo), self._replay_exact(hi)
        f = (math.log(x) - math.log(lo)) / (math.log(hi) - math.log(lo))
        return math.exp((1 - f) * math.log(y0) + f * math.log(y1))

    def _replay_exact(self, executors: int) -> float:
        """Each profile's replay, pinned to its measured runtime by the difference at its own
        count, unless the cluster's typical start-up replaces the run's own: then that
        difference is the run's start-up under the load of its moment, which another run
        will not see, and the replay stands as it is."""
        if executors not in self._cache:
            logs = [math.log(max(1e-3, replay_s(w, executors, self.startup_) + anchor))
                    for w, anchor in zip(self.workloads_, self._anchors(), strict=True)]
            self._cache[executors] = math.exp(sum(logs) / len(logs))
        return self._cache[executors]

    def _anchors(self) -> list[float]:
        """Per profile, measured runtime minus its replay at its own count (0 when pooled);
        replayed once per fit, and only when some replay is not in the memory."""
        if self._anchors_s is None:
            self._anchors_s = [
                0.0 if self.startup_.pooled
                else w.runtime_s - replay_s(w, w.scale_out, self.startup_)
                for w in self.workloads_
            ]
        return self._anchors_s

    def _log_ratios(self, points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
        return [(math.log(x), math.log(y / self.replay(int(x)))) for x, y in points]

    def _choose_correction(
        self, points: Sequence[tuple[float, float]]
    ) -> tuple[str, tuple[float, float], dict[str, float]]:
        data = self._log_ratios(points)
        forms = list(CORRECTIONS) if self.correction == "auto" else [self.correction]
        if self.correction not in ("auto", *CORRECTIONS):
            raise ValueError(f"correction must be 'auto' or one of {CORRECTIONS}")
        scores: dict[str, float] = {}
        for form in forms:
            errs = []
            for i in range(len(data)):
                rest = data[:i] + data[i + 1 :]
                if form != "none" and not _fittable(form, rest):
                    break
                theta = _fit_correction(form, rest)
                errs.append(abs(data[i][1] - _correction(theta, data[i][0], _log_range(rest))))
            else:
                if errs:
                    scores[form] = sum(errs) / len(errs)
        best = min(scores, key=scores.get) if scores else forms[0]
        if best != "none" and not _fittable(best, data):
            best = "none"
        return best, _fit_correction(best, data), scores

    def _loo_ratios(self, points: Sequence[tuple[float, float]]) -> list[float]:
        """runtime / predicted of each run by the chosen correction fitted without it (the
        correction "none" when the rest cannot fit it): the what-if's held-out errors, which
        planning calibrates its bound on as it does a runtime model's."""
        data = self._log_ratios(points)
        out = []
        for i, (t, y) in enumerate(data):
            rest = data[:i] + data[i + 1 :]
            form = self.correction_ if _fittable(self.correction_, rest) else "none"
            theta = _fit_correction(form, rest)
            out.append(math.exp(y - _correction(theta, t, _log_range(rest))))
        return out

    def held_out_ratios(self) -> list[float]:
        return list(self.loo_ratios_)

    def _residual_sd(self, points: Sequence[tuple[float, float]]) -> float:
        data = self._log_ratios(points)
        a, b = self.theta_
        res = [y - (a + b * t) for t, y in data]
        k = {"none": 0, "constant": 1, "log-linear": 2}[self.correction_]
        dof = len(res) - k
        return math.sqrt(sum(r * r for r in res) / dof) if dof > 0 else 0.0

    # -- prediction
    def predict(self, scale_outs: Any, overlaps: Any = None) -> list[float]:
        """Runtime in seconds per scale-out (co-runners are not modelled: `overlaps` is
        accepted for planning's protocol and ignored)."""
        return [self.replay(x) * math.exp(_correction(self.theta_, math.log(x),
                                                      self.correction_range_))
                for x in _scale_outs(scale_outs)]

    def predict_interval(
        self, scale_outs: Any, overlaps: Any = None, confidence: float = 0.9
    ) -> tuple[list[float], list[float]]:
        """A log-normal interval: the what-if's measured error growing with the distance in
        log scale-out from the nearest observed run, and the runs' residual spread."""
        z = StandardNormal().inv_cdf(0.5 + confidence / 2)  # NormalDist's, bit for bit
        seen = [math.log(x) for x, _ in self.points_]
        lower, upper = [], []
        for x, p in zip(_scale_outs(scale_outs), self.predict(scale_outs), strict=True):
            distance = min(abs(math.log(x) - s) for s in seen)
            sd = math.hypot(LOG_ERROR_AT_OBSERVED + LOG_ERROR_PER_LOG_SCALE_OUT * distance,
                            self.residual_sd_)
            lower.append(p * math.exp(-z * sd))
            upper.append(p * math.exp(z * sd))
        return lower, upper

    @property
    def loo_error_(self) -> float:
        """Leave-one-out mean |log(runtime / predicted)| of the chosen correction."""
        return self.cv_.get(self.correction_, 0.0)

    def interference(self, job: Any) -> tuple[float, float]:
        return 0.0, 0.0

    def cache_key(self) -> str:
        """What the replay curve depends on (the workloads' content and the start-up fit),
        for `memory` and for caches of models that use the curve."""
        return self._key

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "what-if",
            "profiles": [w.app_id for w in self.workloads_],
            "observed": [
                {"scale_out": w.scale_out, "runtime_s": w.runtime_s} for w in self.workloads_
            ],
            "runs": len(self.points_),
            "scale_out_range": list(self.scale_out_range_),
            "startup": {**self.startup_.describe(), **self.startup_choice_.describe()},
            "correction": {"form": self.correction_, "c0": self.theta_[0],
                           "c1_log_scale_out": self.theta_[1],
                           "cv_mean_abs_log_error": dict(self.cv_)},
        }


def _points(runs: Sequence[Mapping[str, Any]]) -> list[tuple[float, float]]:
    """(scale-out, runtime) of the runs that have both."""
    return [(float(r["scale_out"]), float(r["runtime_s"])) for r in runs
            if (r.get("runtime_s") or 0) > 0 and (r.get("scale_out") or 0) >= 1]


def _fittable(form: str, data: Sequence[tuple[float, float]]) -> bool:
    if form == "none":
        return True
    if form == "constant":
        return len(data) >= 1
    return len({round(t, 9) for t, _ in data}) >= 2


def _log_range(data: Sequence[tuple[float, float]]) -> tuple[float, float]:
    ts = [t for t, _ in data]
    return (min(ts), max(ts)) if ts else (0.0, 0.0)


def _correction(theta: tuple[float, float], t: float, t_range: tuple[float, float]) -> float:
    """c0 + c1·log x, its trend held flat beyond the runs it was learned from: a slope from
    runs a few executors apart (co-runners, noise) is no evidence far from them, where the
    replay alone says how the runtime scales (a 3-run slope at 31-43 executors, carried to
    9, predicted a third of the real runtime: bench.coldstart, simulator triple kmeans)."""
    return theta[0] + theta[1] * min(max(t, t_range[0]), t_range[1])


def _fit_correction(form: str, data: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """(c0, c1) of log(runtime / replay) = c0 + c1·log x by least squares."""
    if form == "none" or not data:
        return 0.0, 0.0
    mean_t = sum(t for t, _ in data) / len(data)
    mean_y = sum(y for _, y in data) / len(data)
    if form == "constant":
        return mean_y, 0.0
    sxx = sum((t - mean_t) ** 2 for t, _ in data)
    if sxx == 0:
        return mean_y, 0.0
    b = sum((t - mean_t) * (y - mean_y) for t, y in data) / sxx
    return mean_y - b * mean_t, b


def fit_whatif(
    profiles: Sequence[AppProfile],
    runs: Sequence[Mapping[str, Any]] = (),
    cluster_profiles: Sequence[AppProfile] = (),
    **params: Any,
) -> WhatIfModel:
    """Fit the what-if to a job's profiles (newest first) and runs (see WhatIfModel)."""
    return WhatIfModel(**params).fit(profiles, runs, cluster_profiles)


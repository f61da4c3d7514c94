"""Memory accuracy, extrapolating in input size, on real Spark runs (bench/memory_record.py).

    python -m bench.memory_accuracy [--sets tune test] [--confidence 0.95] [--output FILE]

Each sized case is a (job, input size, executor count) whose **need** was measured (the
smallest executor memory, 64 MB steps, at which the run succeeds). Every method sizes it from
the job's runs with a smaller input only (its profile runs at the user's default reservation:
the peaks their event logs report, cobell's own fold), at every executor count recorded, and
is scored against the need: the reservation succeeds when it is at least the need, and its
container against the smallest container covering the need (on standalone a container is the
heap, in 64 MB steps, at least Spark's 512 MB: the same rule for both). Peers in one table:

* user's default: the reservation the runs were recorded at (memory_record.PROFILE_MEMORY_MB);
* 1.2 x largest peak: the practitioners' rule on the largest heap peak seen;
* linear fit of peak: one least-squares line of the heap peak against input size (the
  memory-profiling tools' model), its prediction at the case;
* paper (KNN): the memory function chosen by the nearest other job (the paper's selector on
  cobell's event-log features, core/memory/selector.py), fitted to this job's runs, plus the
  paper's suggested 10 % over-provisioning;
* cobell: core/memory (the experts chosen per job by nested forward CV, one-standard-error
  rule; the conformal upper bound at --confidence), what `cobell predict` reserves.

The paper's and cobell's rows use the demand core/memory/demand.py derives from each run; the
two practitioners' rows the raw heap peak, as their rules say.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import publish

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "memory"
RESULTS = ROOT / "bench" / "results"
MB = 1024 * 1024
STEP_MB = 64
FLOOR_MB = 512
PAPER_MARGIN = 1.10
GOAL_SUCCESS_PCT = 95.0
GOAL_MEDIAN_RATIO = 1.3

METHODS = ("default", "peak12", "linear", "paper", "cobell")
LABELS = {
    "default": "user's default",
    "peak12": "1.2 x largest peak",
    "linear": "linear fit of peak",
    "paper": "paper (KNN function) + 10 %",
    "cobell": "cobell",
}

# Why a method may size nothing on a set
UNSIZED = {"paper": "its selector takes the function of another job, and the set has one"}


@dataclass(frozen=True)
class Run:
    job: str
    input_bytes: int
    scale_out: int
    reserved_mb: int
    outcome: str
    peak_mb: float | None  # the heap peak cobell's fold reads (peak_memory_mb)
    profile: Mapping[str, Any]  # the run's record: executors' peaks, GC, shuffle, tasks


@dataclass(frozen=True)
class Case:
    job: str
    input_bytes: int
    scale_out: int
    above_mb: int  # the need is above this (a reservation that failed, or Spark's floor - 64)
    at_most_mb: int | None  # and at most this (one that succeeded); None: unbounded

    @property
    def need_mb(self) -> int | None:
        """The need when the search settled it (to 64 MB), else None."""
        if self.at_most_mb is not None and self.at_most_mb - self.above_mb <= STEP_MB:
            return self.at_most_mb
        return None


def granted(heap_mb: float) -> int:
    """A standalone worker's grant for a heap: 64 MB steps, at least Spark's smallest."""
    return max(FLOOR_MB, math.ceil(heap_mb / STEP_MB - 1e-9) * STEP_MB)


def load(set_name: str, history: str = "profile") -> tuple[list[Run], list[Case]]:
    """The set's runs and cases. `history` "profile": each size's profile run (at the user's
    default heap: a job's first runs); "all": every run of every application, the search
    applications' at smaller heaps too (their successes with peaks, their memory failures:
    a job whose history also holds runs near its need, as cobell's own sizing and
    --retry-on-oom leave it)."""
    base = DATA / set_name
    profiles: dict[tuple, dict] = {}  # the last profile run of a case (a chunk cut short
    searched = []  # may have left an earlier)
    for line in (base / "runs.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["purpose"] == "profile":
            profiles[(r["job"], r["rows"], r["scale_out"])] = r
        elif history == "all" and r["outcome"] in ("succeeded", "memory") \
                and not r.get("ignored"):
            searched.append(r)
    runs = []
    for r in [*profiles.values(), *searched]:  # the size's own heap peak (the fold's)
        runs.append(Run(r["job"], r["input_bytes"], r["scale_out"], r["executor_memory_mb"],
                        r["outcome"], r.get("heap_mb") or None, r))
    cases = []  # every searched case: settled to 64 MB, or only bounded (a search cut short)
    for n in json.loads((base / "needs.json").read_text()).values():
        if n.get("need_mb"):
            cases.append(Case(n["job"], n["input_bytes"], n["scale_out"],
                              max(n["above_mb"], n["need_mb"] - STEP_MB), n["need_mb"]))
        elif n.get("above_mb") is not None:
            cases.append(Case(n["job"], n["input_bytes"], n["scale_out"], n["above_mb"],
                              n.get("at_most_mb")))
    return runs, cases


def history_rows(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """The runs as cobell's history holds them (memory columns): what the core reads."""
    return [{"input_bytes": r.input_bytes, "scale_out": r.scale_out,
             "executor_memory_mb": r.reserved_mb, "peak_memory_mb": r.peak_mb,
             "status": "succeeded" if r.outcome == "succeeded" else "failed",
             "failure_reason": "memory" if r.outcome == "memory" else None}
            for r in runs]


def training(runs: Sequence[Run], case: Case) -> list[Run]:
    return [r for r in runs if r.job == case.job and r.input_bytes < case.input_bytes]


# --- the methods ------------------------------------------------------------------------------


def size_default(train: Sequence[Run], case: Case, **_: Any) -> float | None:
    return float(train[0].reserved_mb) if train else None


def size_peak12(train: Sequence[Run], case: Case, **_: Any) -> float | None:
    peaks = [r.peak_mb for r in train if r.peak_mb]
    return 1.2 * max(peaks) if peaks else None


def size_linear(train: Sequence[Run], case: Case, **_: Any) -> float | None:
    points = [(r.input_bytes / MB, r.peak_mb) for r in train if r.peak_mb]
    if len({p[0] for p in points}) < 2:
        return None
    xs, ys = zip(*points, strict=True)
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)
    return my + slope * (case.input_bytes / MB - mx)


STANDALONE = {"backend": "standalone"}  # the recordings' cluster: a container is the heap


def cobell_method(name: str) -> tuple[Any, dict[str, Any]]:
    """(demand rule, MemoryModel options) of a cobell method by name; None, {}: the code's
    default. "default": demand.DEMAND with model.py's conformal bound (what cobell ships);
    "peak-nix": the candidate frozen on tune-quiet, demand.PEAK_RULE with bound.DEFAULT_PRIOR;
    its two halves alone: "peak-conformal" (PEAK_RULE, the conformal bound) and "demand-prior"
    (DEMAND, DEFAULT_PRIOR's bound); "history-prior" (the prior the set's other jobs give,
    core/memory/history_prior.py, resolved per case by `score`); "success-cap" (model.py
    success_bound); "deep-folds" (select.nested_ratios deep_only,
    bench/results/memory_fold_depth.md); "reserved-scale" (the held-out ratios with both sides
    at least Spark's 512 MB heap, select.grant_ratio, as the prior's are)."""
    from cobell_cli.core.memory.bound import DEFAULT_PRIOR
    from cobell_cli.core.memory.demand import PEAK_RULE

    return {"default": (None, {}), "peak-nix": (PEAK_RULE, {"prior": DEFAULT_PRIOR}),
            "peak-conformal": (PEAK_RULE, {}), "demand-prior": (None, {"prior": DEFAULT_PRIOR}),
            "history-prior": (None, {"prior": HISTORY_PRIOR}),
            "success-cap": (None, {"cap_by_successes": True}),
            "deep-folds": (None, {"deep_folds": True}),
            "reserved-scale": (None, {"reserved_scale": True})}[name]


# Stands for the prior a case's job borrows from the set's other jobs: fitted per job by
# `score`, not one constant.
HISTORY_PRIOR = "the other jobs'"
COBELL_METHODS = ("default", "peak-nix", "peak-conformal", "demand-prior", "history-prior",
                  "success-cap", "deep-folds", "reserved-scale")
CANDIDATES = COBELL_METHODS[1:]  # scored beside the default on every set it runs


def cobell_memory(train: Sequence[Run], case: Case, confidence: float,
                  options: Mapping[str, Any] | None = None, rule: Any = None) -> Any:
    """cobell's memory at the case, as `cobell predict` sizes it (core/memory/plan.py on the
    runs' memory columns): None when it sizes nothing. `options` (MemoryModel's) and `rule`
    (demand.py): a candidate's, None for the default."""
    from cobell_cli.core.memory.demand import observations
    from cobell_cli.core.memory.model import MemoryModel
    from cobell_cli.core.memory.plan import MemoryRequest, plan_memory
    from cobell_cli.core.memory.sizing import ContainerRules

    rows = history_rows(train)
    obs = observations(rows, rule) if rule is not None else observations(rows)
    if not any(o.demand_mb for o in obs):
        return None
    model = MemoryModel(**(options or {})).fit(obs)
    request = MemoryRequest(ContainerRules(**STANDALONE), confidence,
                            input_bytes=case.input_bytes)
    return plan_memory(rows, [case.scale_out], request, model).at(case.scale_out)


def size_cobell(train: Sequence[Run], case: Case, confidence: float,
                options: Mapping[str, Any] | None = None,
                rule: Any = None, **_: Any) -> float | None:
    at = cobell_memory(train, case, confidence, options, rule)
    return at.upper_peak_mb if at is not None else None


def decompose(runs: Sequence[Run], case: Case, confidence: float
              ) -> tuple[float, float, float, float]:
    """cobell's container / the need's container as four factors whose product it is: the
    point prediction / the need (what the runs' peaks say, demand.py), the bound's factor
    (upper / point, bound.py), the grant's rounding (the grant / the upper bound: 64 MB steps,
    Spark's 512 MB floor) and the need / its own grant (below 1 where the floor lifts it)."""
    train = [r for r in training(runs, case) if r.outcome in ("succeeded", "memory")]
    at = cobell_memory(train, case, confidence)
    need = float(case.at_most_mb)  # type: ignore[arg-type]
    point, upper = at.predicted_peak_mb, at.upper_peak_mb
    return (point / need, upper / point, at.executor_memory_mb / upper,
            need / granted(need))


def explain(runs: Sequence[Run], cases: Sequence[Case], confidence: float) -> str:
    """The medians of decompose() over the cases cobell sized with a settled need."""
    parts = [decompose(runs, c, confidence) for c in cases if c.need_mb is not None
             and any(r.peak_mb for r in training(runs, c) if r.outcome == "succeeded")]
    if not parts:
        return ""
    point, bound, rounding, floor = (statistics.median(p[i] for p in parts) for i in range(4))
    return (f"cobell's container / need as factors (medians over its {len(parts)} settled "
            f"cases; each case's factors multiply to its ratio, the medians need not): point "
            f"prediction / need {point:.2f} (the demand from the runs' peaks, demand.py), "
            f"bound factor {bound:.2f} (the next held-out ratio's {confidence:g}-quantile, "
            f"bound.py), grant rounding {rounding:.2f} (64 MB steps, Spark's 512 MB floor), "
            f"need / its grant {floor:.2f}.")


def size_paper(train: Sequence[Run], case: Case, all_runs: Sequence[Run],
               **_: Any) -> float | None:
    """The nearest other job's memory function (chosen on all its own runs), fitted here."""
    from cobell_cli.core.memory.demand import observations
    from cobell_cli.core.memory.model import MemoryModel
    from cobell_cli.core.memory.select import candidate
    from cobell_cli.core.memory.selector import KnownJob, nearest

    mine = _features(train)
    if mine is None:
        return None
    known = []
    for job in sorted({r.job for r in all_runs} - {case.job}):
        theirs = [r for r in all_runs if r.job == job]
        features = _features(theirs)
        obs = observations(history_rows(theirs))
        if features is None or not any(o.demand_mb for o in obs):
            continue
        label = MemoryModel(nested=False).fit(obs).candidate_.label
        known.append(KnownJob(job, features, label))
    neighbour = nearest(mine, known)
    if neighbour is None:
        return None
    obs = [o for o in observations(history_rows(train)) if o.demand_mb]
    chosen = candidate(neighbour.label)
    fitted = chosen.fit(obs) or candidate("constant").fit(obs)
    if fitted is None:
        return None
    from cobell_cli.core.memory.records import MemoryObservation, feature_value

    query = MemoryObservation(case.input_bytes, case.scale_out, None)
    feature = chosen.feature if chosen.fit(obs) else "input"
    return PAPER_MARGIN * fitted.predict(feature_value(query, feature))


def _features(runs: Sequence[Run]) -> tuple[float, ...] | None:
    """The selector's features (core/memory/selector.py) from the runs' recorded profiles."""
    from cobell_cli.core.memory.selector import FEATURE_NAMES

    rows = []
    for r in runs:
        p = r.profile
        heaps = [e["heap_mb"] for e in p.get("executors") or []]
        if not heaps:
            continue
        storage = max(e["storage_mb"] for e in p["executors"])
        rows.append((p["shuffle_write_bytes"] / max(r.input_bytes, 1),
                     storage / max(heaps) if max(heaps) > 0 else 0.0,
                     p["task_gc_s"] / p["task_run_s"] if p["task_run_s"] > 0 else 0.0,
                     math.log10(max(p["tasks"], 1))))
    if not rows:
        return None
    assert len(rows[0]) == len(FEATURE_NAMES)
    return tuple(statistics.fmean(col) for col in zip(*rows, strict=True))


SIZERS: dict[str, Callable[..., float | None]] = {
    "default": size_default, "peak12": size_peak12, "linear": size_linear,
    "paper": size_paper, "cobell": size_cobell,
}


# --- scoring ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Score:
    method: str
    case: Case
    reserved_mb: int | None  # None: the method could not size it

    @property
    def ok(self) -> bool:
        return self.reserved_mb is not None and self.case.at_most_mb is not None \
            and self.reserved_mb >= self.case.at_most_mb

    @property
    def failed(self) -> bool:
        """Certainly too small: at most a reservation that failed."""
        return self.reserved_mb is not None and self.reserved_mb <= self.case.above_mb

    @property
    def ratio(self) -> float | None:
        """Reserved / the smallest grant covering the need, at the need's largest value."""
        if self.reserved_mb is None or self.case.at_most_mb is None:
            return None
        return self.reserved_mb / granted(self.case.at_most_mb)

    @property
    def ratio_high(self) -> float | None:
        """The same at the need's smallest value (equal to `ratio` once settled)."""
        if self.reserved_mb is None:
            return None
        return self.reserved_mb / granted(self.case.above_mb + STEP_MB)


def score(runs: Sequence[Run], cases: Sequence[Case], confidence: float,
          options: Mapping[str, Any] | None = None, rule: Any = None) -> list[Score]:
    """Every method's reservation for every case; `options`, `rule`: cobell's MemoryModel
    options (a "prior" of HISTORY_PRIOR: the one the set's other jobs give) and demand rule
    (demand.py) of a candidate (cobell_method), None for the default."""
    out = []
    borrowed: dict[str, Any] = {}
    for case in cases:
        history = [r for r in training(runs, case) if r.outcome in ("succeeded", "memory")]
        succeeded = [r for r in history if r.outcome == "succeeded"]
        case_options = options
        if options and options.get("prior") == HISTORY_PRIOR:
            if case.job not in borrowed:
                borrowed[case.job] = other_jobs_prior(runs, case.job, rule)
            case_options = {**options, "prior": borrowed[case.job]}
        for method in METHODS:  # cobell reads memory failures too; the peers' rules do not
            train = history if method == "cobell" else succeeded
            heap = SIZERS[method](train, case, confidence=confidence, all_runs=runs,
                                  options=case_options, rule=rule)
            out.append(Score(method, case, granted(heap) if heap is not None else None))
    return out


def other_jobs_prior(runs: Sequence[Run], job: str, rule: Any = None) -> Any:
    """The ratio prior `job` borrows from every other job's runs in the set (all their
    sizes: a history where the other recurring jobs have run a while), None when too few."""
    from cobell_cli.core.memory.demand import observations
    from cobell_cli.core.memory.history_prior import history_prior

    jobs = {}
    for name in sorted({r.job for r in runs}):
        rows = history_rows([r for r in runs if r.job == name
                             and r.outcome in ("succeeded", "memory")])
        jobs[name] = observations(rows, rule) if rule is not None else observations(rows)
    return history_prior(jobs, job)


def summary(scores: Sequence[Score], method: str, largest: bool = False) -> dict[str, float]:
    """Cases certainly covered / certainly short / undetermined (a need only bounded), and the
    container ratio's median at the need's largest (`median_ratio`) and smallest value;
    `largest`: only each (job, executors)'s largest input (the goal's "size the largest")."""
    mine = [s for s in scores if s.method == method]
    if largest:
        top = {}
        for s in mine:
            key = (s.case.job, s.case.scale_out)
            top[key] = max(top.get(key, 0), s.case.input_bytes)
        mine = [s for s in mine if s.case.input_bytes == top[(s.case.job, s.case.scale_out)]]
    sized = [s for s in mine if s.reserved_mb is not None]
    ratios = [s.ratio for s in sized if s.ratio is not None]
    highs = [s.ratio_high for s in sized if s.ratio_high is not None]
    return {
        "cases": len(mine),
        "sized": len(sized),
        "ok": sum(s.ok for s in mine),
        "failed": sum(s.failed for s in mine),
        "success_pct": 100.0 * sum(s.ok for s in mine) / max(len(mine), 1),
        "median_ratio": statistics.median(ratios) if ratios else math.nan,
        "median_high": statistics.median(highs) if highs else math.nan,
        "mean_ratio": statistics.fmean(ratios) if ratios else math.nan,
        "worst_under": min(ratios) if ratios else math.nan,
    }


def goals(s: Mapping[str, float]) -> str:
    """The issue's goals on these cases: >= 95 % certainly succeed, median container <= 1.3x
    (at the need's upper bound: the ratio that is certain not to flatter)."""
    success = s["success_pct"] >= GOAL_SUCCESS_PCT
    ratio = s["median_ratio"] <= GOAL_MEDIAN_RATIO
    return f"{'yes' if success else 'no'} / {'yes' if ratio else 'no'}"


def loads(set_name: str) -> tuple[float, float] | None:
    """The 1-minute load average the set's applications started at: (min, max)."""
    path = DATA / set_name / "runs.jsonl"
    values = [json.loads(line).get("loadavg") for line in path.read_text().splitlines()]
    values = [v for v in values if v is not None]
    return (min(values), max(values)) if values else None


# How and when each set was recorded, and what was chosen on it (data, not code: the constants
# themselves are read from the code, method_text)
RECORDED = {
    "tune-v2": "the set session 3's demand constants were fitted on (6 bounded cases of one "
               "job, older job parameters).",
    "tune": "recorded with `test` in one run of bench/memory_record.py before session 4's "
            "method was frozen, on the shared machine without the lock, under nice 19, two "
            "applications at a time, one profile application for every job (a heap peak may "
            "carry an earlier job's garbage); four first-size timeouts (JVM warm-up) carry "
            "`ignored` and were searched again. Nothing of the current method was fitted on it.",
    "test": "recorded with `tune` (other value widths, row counts and `distinct` domains); "
            "nothing was fitted on it.",
    "fresh": "recorded in session 4 after that method was frozen, one profile application "
             "per job, at loads of 23-43; nothing was fitted on it.",
    "tune-quiet": "recorded quietly (one application at a time, each under the machine-wide "
                  "lock at a 1-minute load below 1.5), one profile application per job, "
                  "every executor metric kept: the set the candidate `peak-nix` (demand.PEAK_RULE, "
                  "bound.DEFAULT_PRIOR) was fitted on (bench.memory_measure).",
    "test-quiet": "recorded as `tune-quiet` after the method was frozen on it (wider values, "
                  "other row counts and `distinct` domain, another seed): nothing was fitted "
                  "or chosen on it. Its x1 half was recorded first; its x2 half a session "
                  "later, alone (loads 0.6-1.4): a case of either executor count is sized "
                  "from the job's smaller sizes at both counts, as on tune-quiet, so its x1 "
                  "rows moved when the x2 runs joined the histories.",
    "check-quiet": "recorded as `tune-quiet`, alone, on another day (2026-11-29; loads "
                   "0.18-1.30 at each application's start), with other values, row counts, "
                   "`distinct` domain and seed: nothing was fitted or chosen on it. The "
                   "candidate `history-prior` was frozen after it was recorded and before it "
                   "was scored on it; every other candidate before it was recorded.",
}


def method_text() -> str:
    """cobell's constants as the code has them, and where each was fitted."""
    from cobell_cli.core.memory import model
    from cobell_cli.core.memory.bound import DEFAULT_PRIOR
    from cobell_cli.core.memory.demand import DEMAND, PEAK_RULE

    rule, prior, peak = DEMAND, DEFAULT_PRIOR, PEAK_RULE
    return (f"cobell's default demand from a run's heap peak P at reservation R "
            f"(core/memory/demand.py DEMAND): the live heap P less {rule.garbage_share:g} / (1 - "
            f"{rule.garbage_share:g}) of the slack R - P, at least {rule.live_floor:g} P, times "
            f"{rule.headroom:g}, at most R; its default bound (core/memory/model.py "
            f"memory_ratio_bound): the held-out ratios' conformal bound, else the largest times "
            f"{model.TAIL_MARGIN:g}, at least {model.MIN_MARGIN:g} below {model.MIN_RATIOS} "
            f"ratios. The candidate `peak-nix` (--method peak-nix; not the default, "
            f"see below): the peak times {peak.headroom:g} (demand.PEAK_RULE) and the next "
            f"held-out ratio's quantile under a prior (bound.DEFAULT_PRIOR) of bias "
            f"{prior.mean:g}, spread {prior.scale2 ** 0.5:.3g} (log), worth {prior.kappa:g} and "
            f"{prior.dof:g} ratios, both fitted on tune-quiet only.")


def paired_log_ratio(default: Sequence[Score], other: Sequence[Score]) -> tuple[float, float]:
    """Mean and standard error of log(other's container / the default's), case by case (the
    same cases, both sized): below 0, the other reserves less."""
    mine = {s.case: s for s in default if s.method == "cobell"}
    diffs = [math.log(o.reserved_mb / mine[o.case].reserved_mb) for o in other
             if o.method == "cobell" and o.reserved_mb and o.case in mine
             and mine[o.case].reserved_mb]
    if len(diffs) < 2:
        return math.nan, math.nan
    return statistics.fmean(diffs), statistics.stdev(diffs) / math.sqrt(len(diffs))


def default_text(results: Mapping[str, list[Score]],
                 candidates: Mapping[str, Mapping[str, list[Score]]]) -> list[str]:
    """Which method is the default and why: the default beside each candidate on every set,
    paired case by case (peak-nix was frozen on tune-quiet; every other set is out of sample
    for it; history-prior and success-cap on tune-quiet and tune)."""
    lines = ["## Which method is the default", "",
             "The project keeps a component in the default only if it wins out of sample by a "
             "standard error; otherwise the simpler, earlier form stays. The candidate "
             "`peak-nix` (demand.PEAK_RULE with bound.DEFAULT_PRIOR) was chosen and fitted on "
             "tune-quiet (bench.memory_measure); `peak-conformal` and `demand-prior` are its "
             "two halves alone. `history-prior` (the prior fitted on the set's other jobs, "
             "core/memory/history_prior.py) and `success-cap` (the bound at most what the "
             "job's successes prove if its need grows no faster than its input, model.py "
             "success_bound) were frozen after check-quiet was recorded and before anything "
             "was scored on it; `deep-folds` (the bound's ratios without the folds trained on "
             "two sizes where deeper ones exist, select.nested_ratios) after the default's "
             "reservations on check-quiet were seen, before its folds or the candidate were; "
             "`reserved-scale` (the bound's ratios with both sides at least Spark's 512 MB "
             "heap, as the priors' are; no constant fitted) after every set had been seen. "
             "Every row is scored on the same cases as the default's by this command; log "
             "container = the mean of log(the candidate's reservation / the "
             "default's) over the cases, +- its standard error (below 0: smaller containers). "
             "On the held-out quiet sets the priors' bounds reserve far less but cover fewer "
             "cases on check-quiet; on the sets recorded under load (test, fresh: held out "
             "too) they reserve more or cover fewer cases, and in the simulated worlds end to "
             "end the fixed prior costs more memory-MB-seconds. success-cap reserves less on "
             "every quiet set at equal success, but end to end it has more OOM runs in the "
             "node-level world; deep-folds reserves less on every held-out set at equal "
             "success but one case fewer on tune, and end to end more OOM runs in both worlds "
             "(docs/memory.md); reserved-scale reserves less on every set but covers two cases "
             "fewer on check-quiet and on fresh (a need below 512 MB then says nothing of "
             "how far a prediction can miss): no candidate wins out of sample everywhere, "
             "so the default stays demand.DEMAND with the conformal bound.", "",
             "| set | method | certainly succeeds | certainly too small | median container / "
             "need | log container vs the default |",
             "|---|---|---|---|---|---|"]
    for set_name, per_method in candidates.items():
        base = results.get(set_name, [])
        for name, subset in (("default", base), *per_method.items()):
            s = summary(subset, "cobell")
            mean, se = paired_log_ratio(base, subset)
            diff = "-" if name == "default" else f"{mean:+.3f} +- {se:.3f}"
            lines.append(f"| {set_name} | {name} | {s['ok']}/{s['cases']} "
                         f"({s['success_pct']:.0f} %) | {s['failed']} | "
                         f"{s['median_ratio']:.2f} | {diff} |")
    return [*lines, ""]


HISTORIES = {
    "profile": "each case sized from the smaller sizes' profile runs, at the user's default "
               "heap (memory_record.PROFILE_MEMORY_MB): a job's first runs, whose peaks hold "
               "the most garbage",
    "all": "each case sized from every run of the smaller sizes: the profile runs and the "
           "search applications' at smaller heaps (successes with their peaks, memory "
           "failures as lower bounds), as a job's history holds them once cobell has sized "
           "it and --retry-on-oom has run; the peers read the successes' peaks",
}


def side_by_side(results: Mapping[str, list[Score]], method: str = "cobell") -> list[str]:
    """One method on every set, and on each executor count of it: a tune set's figures beside
    a test set's (where a test set holds fewer executor counts, the like-for-like row is the
    tune set's at the same count)."""
    lines = [f"## {LABELS[method]} on each set", "",
             "| set | executors | sized | certainly succeeds | certainly too small "
             "| median container / need (upper .. lower) | goals met |",
             "|---|---|---|---|---|---|---|"]
    for set_name, scores in results.items():
        counts = sorted({s.case.scale_out for s in scores})
        for label, subset in [("all", scores)] + [
                (str(x), [s for s in scores if s.case.scale_out == x]) for x in counts]:
            s = summary(subset, method)
            if not s["cases"]:
                continue
            lines.append(f"| {set_name} | {label} | {s['sized']}/{s['cases']} | {s['ok']} "
                         f"({s['success_pct']:.0f} %) | {s['failed']} | "
                         f"{s['median_ratio']:.2f} .. {s['median_high']:.2f} | {goals(s)} |")
    return [*lines, ""]


def render(results: Mapping[str, list[Score]], confidence: float, command: str,
           elapsed_s: float, notes: Mapping[str, str] | None = None,
           history: str = "profile",
           candidate: Mapping[str, Mapping[str, list[Score]]] | None = None,
           method: str = "default") -> str:
    lines = [
        "# Memory accuracy: extrapolating in input size (real Spark runs)",
        "",
        f"History: {HISTORIES[history]}.",
        "",
        f"Command: `{command}` ({elapsed_s:.1f} s). Cases and runs: bench/data/memory/<set>/ "
        "(bench/memory_record.py). A case succeeds when the reservation is at least its "
        f"measured need; container ratio = reserved / the smallest grant covering the need. "
        f"cobell ({method}) at memory confidence {confidence:g}. {method_text()} The peers' "
        "constants (1.2, the paper's 10 %) are their sources'.",
        "",
        *(default_text(results, candidate) if candidate else []),
        *[line for name in results for line in (f"Set `{name}`: {RECORDED[name]}", "")
          if name in RECORDED],
        *(side_by_side(results) if len([r for r in results.values() if r]) > 1 else []),
    ]
    for set_name, scores in results.items():
        if not scores:
            lines += [f"## set `{set_name}`: not recorded (no bench/data/memory/{set_name}/): "
                      "nothing measured on it", ""]
            continue
        jobs = sorted({s.case.job for s in scores})
        n = len({(s.case.job, s.case.input_bytes, s.case.scale_out) for s in scores})
        settled = len({(s.case.job, s.case.input_bytes, s.case.scale_out) for s in scores
                       if s.case.need_mb is not None})
        span = loads(set_name)
        lines += [f"## set `{set_name}`: {n} sized cases ({settled} with the need settled to "
                  f"64 MB, the rest bounded), {len(jobs)} jobs ({', '.join(jobs)})",
                  "",
                  f"Load average at the applications' start: {span[0]:.1f}-{span[1]:.1f}."
                  if span else "Load average: not recorded.",
                  "",
                  *([(notes or {})[set_name], ""] if (notes or {}).get(set_name) else []),
                  "All sized cases (sizes 3-5 of each job and executor count, each sized from "
                  "the smaller sizes' runs), then the largest size only; goals: certainly "
                  f"succeeds in >= {GOAL_SUCCESS_PCT:g} % / median container <= "
                  f"{GOAL_MEDIAN_RATIO:g}x (at the need's upper bound).",
                  "",
                  "| method | sized | certainly succeeds | certainly too small | undetermined "
                  "| median container / need (need at its upper .. lower bound) | goals met "
                  "| largest only: succeeds | largest only: median | largest only: goals met |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for method in METHODS:
            s = summary(scores, method)
            t = summary(scores, method, largest=True)
            lines.append(f"| {LABELS[method]} | {s['sized']}/{s['cases']} | {s['ok']} "
                         f"({s['success_pct']:.0f} %) | "
                         f"{s['failed']} | {s['sized'] - s['ok'] - s['failed']} | "
                         f"{s['median_ratio']:.2f} .. {s['median_high']:.2f} | {goals(s)} | "
                         f"{t['ok']}/{t['cases']} ({t['success_pct']:.0f} %) | "
                         f"{t['median_ratio']:.2f} .. {t['median_high']:.2f} | {goals(t)} |")
        unsized = [m for m in METHODS if summary(scores, m)["sized"] == 0]
        if unsized:
            lines += ["", "Sized no case: " + "; ".join(
                f"{LABELS[m]} ({UNSIZED.get(m, 'no runs to size from')})" for m in unsized)
                + "."]
        lines += ["", "Per case: the need's bounds and each method's reservation (MB; "
                  "✓ covers the need, ✗ at most a reservation that failed, ? inside the bounds)",
                  "", "| job | executors | input MB | need | "
                  + " | ".join(LABELS[m] for m in METHODS) + " |",
                  "|---|---|---|---|" + "---|" * len(METHODS)]
        by_case: dict[Case, dict[str, Score]] = {}
        for sc in scores:
            by_case.setdefault(sc.case, {})[sc.method] = sc
        for case, row in sorted(by_case.items(), key=lambda kv: (kv[0].job, kv[0].scale_out,
                                                                kv[0].input_bytes)):
            need = (f"{case.need_mb}" if case.need_mb is not None else
                    f"({case.above_mb}, {case.at_most_mb if case.at_most_mb else 'inf'}]")
            cells = [_cell(row[m]) for m in METHODS]
            lines.append(f"| {case.job} | {case.scale_out} | {case.input_bytes / MB:.0f} | "
                         f"{need} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _cell(score: Score) -> str:
    if score.reserved_mb is None:
        return "-"
    mark = "✓" if score.ok else ("✗" if score.failed else "?")
    return f"{score.reserved_mb} {mark}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+",
                        default=["tune-quiet", "test-quiet", "check-quiet", "tune", "test", "fresh",
                                 "tune-v2"])
    parser.add_argument("--history", choices=["profile", "all"], default="profile",
                        help="what each case is sized from: the smaller sizes' profile runs "
                        "at the user's default heap (a job's first runs), or all their runs, "
                        "the search applications' near the need too")
    parser.add_argument("--confidence", type=float, default=None,
                        help="cobell's memory confidence (default: the CLI's)")
    parser.add_argument("--method", choices=COBELL_METHODS, default="default",
                        help="cobell's demand rule and bound: the default, or the candidate "
                        "frozen on tune-quiet (then also scored beside the default on the quiet "
                        "sets when the default is run)")
    parser.add_argument("--output", type=Path, default=RESULTS / "memory_accuracy.md")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from cobell_cli.core.memory.plan import DEFAULT_MEMORY_CONFIDENCE

    confidence = args.confidence or DEFAULT_MEMORY_CONFIDENCE
    started = time.perf_counter()
    results, notes, candidate = {}, {}, {}
    method_rule, method_options = cobell_method(args.method)
    for set_name in args.sets:
        if not (DATA / set_name / "needs.json").exists():
            results[set_name] = []  # not recorded: said so, not skipped silently
            continue
        runs, cases = load(set_name, args.history)
        results[set_name] = score(runs, cases, confidence, method_options, method_rule)
        notes[set_name] = explain(runs, cases, confidence)
        if args.method == "default":
            candidate[set_name] = {}
            for name in CANDIDATES:
                rule, options = cobell_method(name)
                candidate[set_name][name] = score(runs, cases, confidence, options, rule)
    command = "python -m bench.memory_accuracy " + " ".join(argv or sys.argv[1:])
    text = render(results, confidence, command.strip(), time.perf_counter() - started, notes,
                  args.history, candidate, args.method)
    publish(text + "\n", args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

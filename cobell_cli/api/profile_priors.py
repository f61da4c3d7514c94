"""The history's resource profiles and seen pairs, read for core/profile_effects (and shown
by `model show` and `history show`).

What planning needs to give a co-runner the job never met a pair from the two jobs' resource
profiles: every job's profile (the summed task metrics of its runs' event logs,
`run_profiles`) and every pair the history has seen (the co-runners each job's runtime model
has a pair of its own for; fitted through the planner's `fit`, so the model cache answers
once the history is unchanged). `unseen_pair_structure` learns the structure from them and
chooses it against the pooled effect; `None` when the pooled effect stays (no profile for the
job or none of its co-runners, too few pairs, or the profiles do not predict better).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cobell_cli.core.profile_effects import Structure
    from cobell_cli.store.history import History

MAX_JOBS = 64  # jobs whose pairs are read (the first by name): a bound on the fits


RUNS_PER_PROFILE = 5  # a job's profile: the median over its newest runs with metrics


def job_profiles(history: History, jobs: Sequence[str] | None = None,
                 ) -> dict[str, dict[str, float]]:
    """{job: its resource profile} for the jobs (of `jobs`, else all) whose runs have
    event-log profiles with task metrics."""
    from cobell_cli.core.profile_effects import job_profile, shares

    out = {}
    for job, totals in history.resource_totals(jobs, per_job=RUNS_PER_PROFILE).items():
        p = job_profile(shares(t) for t in totals)
        if p is not None:
            out[job] = p
    return out


def resource_profile(totals: Sequence[dict[str, float]]) -> dict[str, Any] | None:
    """What `model show` and `history show` print of runs' resources: the profile (the
    median of the runs' shares) and the task-seconds it rests on; None without metrics."""
    from cobell_cli.core.profile_effects import job_profile, shares

    profile = job_profile(shares(t) for t in totals)
    if profile is None:
        return None
    task_s = sum(float(t.get("run_s") or 0.0) for t in totals)
    return {"shares": {k: round(v, 4) for k, v in profile.items()}, "runs": len(totals),
            "task_s": round(task_s, 3)}


def profile_text(p: dict[str, Any]) -> str:
    """One line: each class's share of the task time, and what it rests on."""
    classes = " · ".join(f"{k} {v:.2f}" for k, v in p["shares"].items())
    runs = f"{p['runs']} run{'s' if p['runs'] != 1 else ''}"
    return f"{classes} (share of task time; {runs}, {p['task_s']:.0f} task-seconds)"


def unseen_pair_structure(history: History, job: str, co_jobs: Sequence[str],
                          fit: Callable[..., Any], window: int | None = None,
                          ) -> Structure | None:
    """The chosen structure when it can inform the job's co-runners, else None."""
    if not co_jobs:
        return None
    asked = job_profiles(history, [job, *co_jobs])  # the cheap check first
    if job not in asked or not any(k in asked for k in co_jobs if k != job):
        return None
    profiles = job_profiles(history)
    from cobell_cli.core.profile_effects import choose, pair_effects, profile_vectors

    effects = []
    for other in history.job_names()[:MAX_JOBS]:
        runs = history.training_runs(other, window=window)
        if not any(r.get("overlaps") for r in runs):
            continue
        try:
            model = fit(runs)
        except ValueError:
            continue
        effects += pair_effects(other, model.describe())
    structure = choose(effects, profile_vectors(profiles))
    return None if structure.form == "pooled" else structure

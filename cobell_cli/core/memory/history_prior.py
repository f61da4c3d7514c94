"""The ratio prior a job borrows from the other jobs of its own history (empirical Bayes).

bound.DEFAULT_PRIOR is one prior fitted once, on one recorded set (tune-quiet): its spread is
that set's, and a history whose jobs spread more or less (another cluster's garbage, another
GC) borrows a width that is not its own. The interference pairs borrow from the history they
model; this does the same for memory: the prior is fitted (bound.fit_prior) on the held-out
ratios of the history's *other* jobs, each job's ratios on the reserved scale
(select.grant_ratio, both sides at least Spark's floor), so a job's own ratios are not counted
twice. With fewer than two other jobs with two held-out ratios each there is no spread to
borrow and the answer is None (the conformal bound decides, as without a prior).

A candidate, not the default (docs/memory.md, "Which method is the default").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cobell_cli.core.memory.bound import DEFAULT_PRIOR, RatioPrior, fit_prior
from cobell_cli.core.memory.model import MemoryModel
from cobell_cli.core.memory.records import MemoryObservation


def job_ratios(runs: Sequence[MemoryObservation]) -> list[float]:
    """One job's held-out ratios on the reserved scale; none when it has no measured demand."""
    if not any(r.demand_mb for r in runs):
        return []
    # any prior selects the reserved scale (select.grant_ratio's floor); its value is unused
    return MemoryModel(prior=DEFAULT_PRIOR).fit(runs).ratios_


def history_prior(jobs: Mapping[str, Sequence[MemoryObservation]],
                  job: str) -> RatioPrior | None:
    """The prior `job` borrows: fitted on every other job's ratios, None when too few."""
    groups = [job_ratios(runs) for name, runs in sorted(jobs.items()) if name != job]
    try:
        return fit_prior(groups)
    except ValueError:
        return None

"""Interference of co-runner pairs never seen together, from the jobs' resource profiles.

shares.py turns a run's summed task metrics (core/profile.py) into its resource profile and a
job's runs into the job's; structure.py learns, from every pair the history has seen, how
profiles predict a pair's effect, and chooses that form against today's pooled effect by
cross-validation; priors.py reads the seen pairs off the jobs' fitted models and gives a job's
model the priors it consults for co-runners it has no pair of its own for (`pair_prior`).
Pure: no I/O.
"""

from cobell_cli.core.profile_effects.priors import (
    PairPriors,
    PriorFit,
    pair_effects,
    pooled_split,
    priors_for,
)
from cobell_cli.core.profile_effects.shares import CLASSES, job_profile, shares
from cobell_cli.core.profile_effects.structure import (
    FORMS,
    PairEffect,
    Structure,
    choose,
    profile_vectors,
)

__all__ = [
    "CLASSES",
    "FORMS",
    "PairEffect",
    "PairPriors",
    "PriorFit",
    "Structure",
    "choose",
    "job_profile",
    "pair_effects",
    "pooled_split",
    "priors_for",
    "profile_vectors",
    "shares",
]

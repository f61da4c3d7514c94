"""bench.studies.profiles_gap: the two starts of a job never run alone."""

from __future__ import annotations

import numpy as np

from bench.studies.profiles_gap import two_optima
from cobell_cli.core.model.parametric import AMDAHL, FEATURES


def test_where_overlaps_vary_both_starts_find_the_level_of_a_job_never_run_alone() -> None:
    """f = 20 + 30/x, a = 1, every run co-located at overlaps 0.3-0.9: the runs pin f's level
    against a, so the default start and the deflated one end at the same optimum, near the
    truth (35 s alone at 2). The profile sets' runs do not (bench/results/profiles_gap.md)."""
    rng = np.random.default_rng(1)
    runs = [{"scale_out": x, "overlaps": {"other": ov},
             "runtime_s": (20 + 30 / x) * (1 + ov) * float(np.exp(rng.normal(0, .02)))}
            for x in (1, 2, 4) for ov in (0.3, 0.6, 0.9)]
    left_out = {"scale_out": 2, "overlaps": {}, "runtime_s": 35.0}
    for terms in (AMDAHL, FEATURES):
        (a0, f0, _), (a1, f1, _) = two_optima(runs, left_out, terms)
        assert abs(a0 - a1) < 0.01 and abs(f0 - f1) < 0.1
        assert abs(a0 - 1.0) < 0.15 and abs(f0 / 35.0 - 1.0) < 0.05

"""bench.studies.unknown_end and nodetype_constants on made-up numbers (their runs take minutes)."""

from __future__ import annotations

import numpy as np

from bench.studies import nodetype_constants, unknown_end
from cobell_cli.core.nodetype import factors


def test_the_fitted_sd_stretches_the_end_past_exactly_the_level_share_of_runs():
    errors = np.random.default_rng(0).standard_t(3, 4000) * 0.2  # heavy tails, as measured
    sd = unknown_end.sd_for(errors)
    assert abs(unknown_end.ended_share(errors, sd) - 0.9) < 0.002
    assert unknown_end.ended_share(errors, sd / 2) < 0.85  # a narrower sd covers less
    rms = float(np.sqrt(np.mean(errors**2)))
    assert unknown_end.ended_share(errors, rms) > 0.9  # why the rms is not the fit


def test_a_constant_is_set_inside_the_block_and_restored_after_a_failure():
    before = factors.PRIOR_RUNS
    try:
        with nodetype_constants.constant("PRIOR_RUNS", 7.0):
            assert factors.PRIOR_RUNS == 7.0
            raise RuntimeError("inside")
    except RuntimeError:
        pass
    assert before == factors.PRIOR_RUNS


def test_the_summary_is_the_mean_median_and_se_over_cells_in_percent():
    mean, median, se = nodetype_constants.summary([[0.1, 0.3], [0.5]])
    assert np.isclose(mean, 30.0) and np.isclose(median, 30.0)  # over runs
    assert np.isclose(se, 15.0)  # over cells: their means 20 and 50

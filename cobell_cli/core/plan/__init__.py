"""From history, running co-runners and a runtime target to a scale-out: the `Plan`.

One function, `plan()`, serves both `cobell predict`/`cobell submit` and the benchmark's
simulated cluster, so the three interference strategies the benchmark compares are exactly the
code users run:

* "joint"  cobell: every co-runner's overlap from a joint fix-point with the new job's own
           predicted runtime at each candidate scale-out (`overlap.predict_overlaps`).
* "paper"  CoBell as published: Algorithm 1 per co-runner, the new job's runtime assumed to
           equal the target.
* "none"   Bell: co-runners ignored, in fitting and in prediction.

One concern per module: records.py (what a plan returns), history.py (which runs count:
input-size similarity), bootstrap.py (runs 1-6: binary search, the what-if or the model
without interference), co_runners.py (the co-runners' overlaps per candidate),
model_phase.py (bounds and the decision with a model), reasons.py (the wording of why),
planner.py (`plan()` itself).

Pure: no I/O, no clock; `now` is passed in. Raises `UsageError` for impossible arguments.
"""

from cobell_cli.core.calibration import DEFAULT_CONFIDENCE
from cobell_cli.core.plan.bootstrap import MODEL_FROM_USABLE, search_state
from cobell_cli.core.plan.bootstrap import PARAMETRIC_RUNS as PARAMETRIC_RUNS
from cobell_cli.core.plan.bootstrap import SEARCH_RUNS as SEARCH_RUNS
from cobell_cli.core.plan.history import candidate_scale_outs, similar_runs
from cobell_cli.core.plan.model_phase import DEFAULT_INTERVAL_CONFIDENCE
from cobell_cli.core.plan.planner import plan
from cobell_cli.core.plan.records import (
    STRATEGIES,
    CandidatePrediction,
    CoRunnerView,
    Plan,
    SearchObservation,
    SearchState,
)
from cobell_cli.core.plan.records import FitFn as FitFn
from cobell_cli.core.plan.records import Phase as Phase
from cobell_cli.core.plan.records import RuntimeModel as RuntimeModel
from cobell_cli.core.plan.records import Strategy as Strategy

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_INTERVAL_CONFIDENCE",
    "MODEL_FROM_USABLE",
    "STRATEGIES",
    "CandidatePrediction",
    "CoRunnerView",
    "Plan",
    "SearchObservation",
    "SearchState",
    "candidate_scale_outs",
    "plan",
    "search_state",
    "similar_runs",
]

"""The one-run what-if: a Spark run's runtime at other executor counts, from its event log.

The replay, in the spirit of Sparklens' completion estimator: a run's jobs, in submission
order, each job's stages on N x cores task slots, a stage runnable when its parent stages
have ended, free slots taking the next task of the highest-priority runnable stage (Spark's
FIFO scheduler: lowest job id, then lowest stage id), tasks in launch order; jobs that
overlapped in time are replayed together. The driver's time outside jobs (before the first,
between them, after the last) is kept serial and as observed.

Where the plain replay is known to be wrong, and what this one does instead:

* Executors are not all there from the start. A run's log shows when each executor
  registered, and on which host; the replay's first executor registers as the log shows,
  scaled by how many executors share the busiest host at N against the log's (`Startup`,
  evidence.py's HOST_SHARE_OFFSET): N one-core executors starting on one host share its
  CPU; the others follow at the log's spacing.
  Tasks wait for slots that are not there yet, as the first job often does.
* An executor's first task is cold (JVM warm-up, Python worker start): the log shows its
  extra time against the warm tasks of the same stage. The replay strips it from the
  observed cold tasks and charges it to the first task of each replayed slot, so N slots pay
  it N times, in parallel; it too grows with the executors per host.
* Trends in N learned from runs replace that prior only where the evidence supports them
  (evidence.py): the job's own profiles at several executor counts, or other jobs' runs on
  the cluster, each other job kept only when its trend predicts this job's own runs at
  other executor counts better than the prior (so a job with one run is not moved by
  unrelated runs in the history at all). The warm tasks' slow-down on a crowded host comes
  only from such trends: a PySpark log does not show how much of a task computes.
* Costs that grow or shrink with N and that one log cannot show (shuffle fan-in, host
  contention of the tasks' CPU parts): where the job has more than one run, a correction
  log(runtime / replay) = c0 + c1·log N is fitted to its runs and chosen by leave-one-out
  cross-validation against "none" and a constant (`WhatIfModel`).

`sparklens_runtime_s` is the plain replay (fixed task durations, constant driver time,
every executor there from the start), the baseline of bench/whatif.py.

Cost: a replay is a pass over the tasks (a heap per slot; chains of stages, most jobs, skip
the event queue), about 25 ms per 24 000 tasks; `WhatIfModel` replays each scale-out up to
EXACT_UP_TO and a geometric grid beyond, cached per process, or across processes in a
`memory` the caller keeps (keyed by `cache_key()`, a hash of the workloads' content and the
start-up fit: about 1 ms per 25 000 tasks).

Pure: no I/O, no clock. Profiles come in as `cobell_cli.core.profile.AppProfile`.

The package, one concern per module: workload.py (a profile as the replay sees it),
startup.py (executor start-up against N), evidence.py (which start-up terms the evidence
supports), replay.py (the scheduler and the replays), estimator.py (`WhatIfModel`, its
correction and its interval).
"""

from cobell_cli.core.whatif.estimator import CORRECTIONS, WhatIfModel, fit_whatif
from cobell_cli.core.whatif.replay import critical_path_s, replay_s, sparklens_runtime_s
from cobell_cli.core.whatif.startup import Startup, Trend, fit_startup
from cobell_cli.core.whatif.workload import (
    JobGroup,
    StageWork,
    Workload,
    workload,
    workload_digest,
)

__all__ = [
    "CORRECTIONS",
    "JobGroup",
    "StageWork",
    "Startup",
    "Trend",
    "WhatIfModel",
    "Workload",
    "critical_path_s",
    "fit_startup",
    "fit_whatif",
    "replay_s",
    "sparklens_runtime_s",
    "workload",
    "workload_digest",
]

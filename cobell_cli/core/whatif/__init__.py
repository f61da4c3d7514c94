"""The one-run what-if: a Spark run's runtime at other executor counts, from its event log.

The replay, in the spirit of Sparklens' completion estimator: a run's jobs, in submission
order, each job's stages on N x cores task slots, a stage runnable when its parent stages
have ended, free slots taking the next task of the highest-priority runnable stage (Spark's
FIFO scheduler: lowest job id, then lowest stage id), tasks in launch order; jobs that
overlapped in time are replayed together. The driver's time outside jobs (before the first,
between them, after the last) is kept serial and as observed.

Where the plain replay is known to be wrong, and what this one does instead:

* Executors are not all there from the start. A run's log shows when each executor
  registered; the replay's executors register when the cluster's start-up model says they
  would at N (`Startup`: the first and the last registration, and a cold task's extra, each
  a level anchored on the run itself plus a slope in N learned from the executor-added times
  of every profile on the cluster, other jobs included; no slope from a single log).
  Tasks wait for slots that are not there yet, as the first job often does.
* An executor's first task is cold (JVM warm-up, Python worker start): the log shows its
  extra time against the warm tasks of the same stage. The replay strips it from the
  observed cold tasks and charges it to the first task of each replayed slot, so N slots pay
  it N times, in parallel, and a larger N on a crowded host pays more (the slope above).
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
startup.py (executor start-up against N), replay.py (the scheduler and the replays),
estimator.py (`WhatIfModel` and its correction).
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

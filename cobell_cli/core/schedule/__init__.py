"""Deadlines: start now or wait, and the order of waiting submits (issue 27).

A submit with `--deadline` may start now or after a running app ends: each start is sized
with the job's own model (the smallest scale-out meeting the deadline at `--confidence` from
there) and priced (`--minimize`); the cheapest wins, the earlier start on ties. Submits that
wait are decided together, not first-come-first-served (joint.py: the paper's waiting-time
scheduler, with deadlines), and a submit that would start at once first gathers those that
cron fires with it (decision.GATHER_S).

Modules: records.py (what is scheduled and decided), risk.py (P(meet) and bounds from error
ratios, when an app has ended), timeline.py (runtimes of jobs placed in time, jointly),
options.py (one job's starts and their sizing), joint.py (the schedule of all waiting jobs),
queue.py (how long the cluster's queue holds an app), decision.py (what a submit does now).

Pure: no I/O, no clock; `now` and what runs are passed in.
"""

from cobell_cli.core.schedule.joint import schedule
from cobell_cli.core.schedule.records import (
    Busy,
    PendingJob,
    Placement,
    Schedule,
    StartOption,
)
from cobell_cli.core.schedule.risk import error_ratios

__all__ = [
    "Busy",
    "PendingJob",
    "Placement",
    "Schedule",
    "StartOption",
    "error_ratios",
    "schedule",
]
